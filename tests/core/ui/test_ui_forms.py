"""Every form of the page but the upload's holds a few fields and no file: a file part, a body
over the form's size or one that does not say its size is refused before it is read, not spooled
to the temp folder (/try, /reindex and /questions read any multipart body: an outside tester's,
stop 57)."""

from __future__ import annotations

import pytest

from helpers import ui
from recall.ui.security import csrf_value

PORT = 8125
ROUTES = ["/try", "/reindex", "/questions"]


def page_client(**launch):
    return ui.page_client(PORT, **launch)


@pytest.mark.parametrize("route", ROUTES)
def test_a_form_with_a_file_part_is_refused(route, recall_home, hash_model):
    with page_client(allow_writes=True, home=recall_home) as c:
        big = c.post(route, data={"csrf": csrf_value(ui.TOKEN)}, files={"file": ("x.bin", b"a" * (2 << 20))},
                     follow_redirects=False)
        assert big.status_code == 413 and "over" in big.text, big.text[-800:]
        small = c.post(route, data={"csrf": csrf_value(ui.TOKEN)}, files={"file": ("x.bin", b"a" * 100)},
                       follow_redirects=False)
        assert small.status_code == 400 and "file" in small.text, small.text[-800:]


@pytest.mark.parametrize("route", ROUTES)
def test_a_form_that_does_not_say_its_size_is_refused(route, recall_home, hash_model):
    with page_client(allow_writes=True, home=recall_home) as c:
        chunked = c.post(route, content=(part for part in [b"csrf=", b"x" * 10]), follow_redirects=False,
                         headers={"content-type": "application/x-www-form-urlencoded"})
        assert chunked.status_code == 411, chunked.text[-800:]


def test_a_form_of_fields_is_read_as_before(recall_home, hash_model):
    with page_client(allow_writes=True, home=recall_home) as c:
        r = c.post("/questions", data={"csrf": csrf_value(ui.TOKEN), "generate": "nope"}, follow_redirects=False)
        assert r.status_code == 400 and "not a choice" in r.text
        r = c.post("/questions", data={"csrf": "forged", "generate": "nope"}, follow_redirects=False)
        assert r.status_code == 403
