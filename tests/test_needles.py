"""Which needles a file is scanned for, from its first lines."""

from __future__ import annotations

import pytest

from cachediag.ingest.needles import COMPACT_SUMMARY, WANTED, WANTED_WITH_CHAINS, needles_for


@pytest.mark.parametrize(
    ("head", "follow", "expected"),
    [
        ([b'{"version":"2.1.39","type":"user"}\n'], True, WANTED),
        ([b'{"version":"1.0.98","type":"user"}\n'], True, WANTED_WITH_CHAINS),
        # One old line is enough to keep linking chains.
        ([b'{"version":"2.1.39"}\n', b'{"version":"1.0.108"}\n'], True, WANTED_WITH_CHAINS),
        # No version seen: link chains, to be safe.
        ([b'{"type":"summary"}\n'], True, WANTED_WITH_CHAINS),
        (
            [b'{"isSidechain": false, "type": "user"}\n'],
            True,
            (*WANTED, b'"isSidechain": true', COMPACT_SUMMARY),
        ),
        ([b'{"version":"1.0.98"}\n'], False, WANTED),
    ],
)
def test_needles_for(head: list[bytes], follow: bool, expected: tuple[bytes, ...]) -> None:
    assert needles_for(head, follow_chains=follow) == expected
