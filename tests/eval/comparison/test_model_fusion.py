"""Two models' rankings fused by reciprocal rank (``recall-eval compare``'s two-model row):
each note scores the sum of 1 / (60 + its rank) over the lists that hold it."""

import numpy as np

from recall_eval.comparison.pipelines import by_reciprocal_rank

INF = np.inf


def test_each_note_scores_its_reciprocal_ranks_summed_over_the_lists_that_hold_it():
    first = np.array([[3.0, 2.0, 1.0, -INF]])   # w, x, y
    second = np.array([[1.0, 3.0, 2.0, -INF]])  # x, y, w
    got = by_reciprocal_rank([first, second])[0]
    want = [1 / 61 + 1 / 63, 1 / 62 + 1 / 61, 1 / 63 + 1 / 62]
    assert np.allclose(got[:3], want)
    assert got[3] == -INF  # in no list
    assert list(np.argsort(-got[:3])) == [1, 0, 2]  # x is near the top of both


def test_a_question_one_list_has_nothing_for_keeps_the_other_list_s_order():
    first = np.array([[-INF, -INF, -INF]])
    second = np.array([[0.2, 0.9, 0.5]])
    got = by_reciprocal_rank([first, second])[0]
    assert list(np.argsort(-got)) == [1, 2, 0]
