from typing import Any

API: int

def pick(line: bytes) -> tuple[Any, ...] | None: ...
