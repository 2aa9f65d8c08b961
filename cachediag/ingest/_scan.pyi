from typing_extensions import Buffer

API: int

def scan_chunk(
    data: Buffer, start: int, end: int, needles: tuple[bytes, ...]
) -> tuple[list[tuple[int, int, int]], int]: ...
def wanted_lines(data: Buffer, end: int, needles: tuple[bytes, ...]) -> list[int]: ...
