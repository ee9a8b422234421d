"""The frames channel's notices: as few as fit, each line a session and its highest number."""

from __future__ import annotations

import pytest

from openheim.store.frame_notices import MAX_PAYLOAD, payloads, stored


def test_a_batch_is_one_notice_read_back_line_by_line() -> None:
    last = {"a" * 32: 7, "b" * 32: 1_000_000}
    (notice,) = payloads(last)
    assert dict(stored(notice)) == last


def test_a_batch_of_many_sessions_splits_where_a_notice_is_full() -> None:
    last = {f"{n:032x}": n for n in range(1, 1001)}
    notices = payloads(last)
    assert len(notices) > 1
    assert all(len(notice.encode()) <= MAX_PAYLOAD for notice in notices)
    assert [pair for notice in notices for pair in stored(notice)] == list(last.items())
    assert payloads({}) == [] and list(stored("")) == []


@pytest.mark.parametrize("payload", ["12", "x abc", "12 a\n13", "1.5 a"])
def test_a_malformed_notice_is_refused(payload: str) -> None:
    with pytest.raises(ValueError):
        list(stored(payload))
