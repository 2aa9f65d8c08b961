"""Time ``cachediag analyze --json`` against ``ccusage claude session --json --offline``.

Both tools read the same ~100 MiB Claude Code transcript tree, built from the real corpus
by copying its sessions under fresh ids. Runs are interleaved (the order alternates) and
each tool gets one untimed warm-up run, so both see a warm page cache. Reported: median
whole-process wall time, MiB/s, median CPU time and peak RSS, the cachediag/ccusage
ratios, and whether the two agree on the token totals of the tree (exit 1 if not).
docs/benchmarks.md has the method and the figures.

    python scripts/bench_analyze.py [--size-mb 100] [--runs 5] [--keep] [--install venv|none]
    python scripts/bench_analyze.py --small-files 10000 [--size-mb 100]

``--small-files N`` builds a tree of N small session files (``--size-mb`` in all) instead
of whole copies: the shape of a long-used history, where per-file costs dominate.

The cachediag under test is, by default, this checkout installed with ``pip install`` into
a virtual environment of its own (made once, refreshed every run), run through its
``cachediag`` console script: what users run. ``--install none`` instead runs
``python -m cachediag`` with whatever ``PYTHONPATH`` points at (this checkout when unset).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED_CORPUS = REPO.parent / "shared" / "corpus" / "claude-code"
"""Beside the checkout; a git worktree elsewhere finds it beside its main checkout."""
BUNDLED_CORPUS = REPO / "fixtures" / "real"
CCUSAGE_VERSION = "20.0.24"
CCUSAGE_PACKAGES = (f"ccusage@{CCUSAGE_VERSION}", f"@ccusage/ccusage-linux-x64@{CCUSAGE_VERSION}")
CCUSAGE_CACHE = Path(tempfile.gettempdir()) / f"cachediag-bench-ccusage-{CCUSAGE_VERSION}"
MIB = 1024 * 1024
TOKEN_FIELDS = ("input", "cache_read", "cache_creation", "output")

_SESSION_ID = re.compile(rb'"sessionId":\s*"([^"]+)"')
# Response and request ids get a per-copy tag: ccusage deduplicates on them across the
# whole tree, so untagged copies would be counted once by ccusage and N times by us.
_RESPONSE_ID = re.compile(rb'"(msg_|req_)')
_NAMESPACE = uuid.UUID("6f1c1c2e-2b8a-4c55-9d1e-6a0c4b7d9e10")


@dataclass(slots=True)
class SessionUnit:
    """One session of the corpus: its main file, its subagent files, any agent-* files."""

    project: str
    session_id: str
    files: list[tuple[Path, bytes]] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(len(data) for _, data in self.files)


def _file_session_id(rel: Path, data: bytes) -> str:
    parts = rel.parts
    if "subagents" in parts[:-1]:
        return parts[parts.index("subagents") - 1]
    found = _SESSION_ID.search(data)
    return found.group(1).decode() if found else rel.stem


def read_units(corpus: Path) -> list[SessionUnit]:
    """The transcript sessions below ``corpus``, one folder per project."""
    units: dict[tuple[str, str], SessionUnit] = {}
    for project in sorted(p for p in corpus.iterdir() if p.is_dir()):
        for path in sorted(project.rglob("*.jsonl")):
            data = path.read_bytes()
            if _SESSION_ID.search(data[:65536]) is None:
                continue  # not a Claude Code transcript (e.g. a claude-trace request log)
            rel = path.relative_to(project)
            sid = _file_session_id(rel, data)
            unit = units.setdefault((project.name, sid), SessionUnit(project.name, sid))
            unit.files.append((rel, data))
    return list(units.values())


def _copy_path(rel: Path, old: str, new: str) -> Path:
    parts = list(rel.parts)
    if len(parts) == 1 and not parts[0].startswith("agent-"):
        return Path(f"{new}.jsonl")  # a main transcript is named after its session
    return Path(*[new if part == old else part for part in parts])


def build_tree(root: Path, units: list[SessionUnit], target_bytes: int) -> tuple[int, int, int]:
    """Write copies of ``units`` round-robin under ``root/projects`` until the target size.

    Copy ``k`` of a session lives in project ``<project>-copyNN`` with a fresh session id
    (file names, folder names and every ``sessionId`` value rewritten alike) and tagged
    response ids. Returns (bytes, files, sessions) written.
    """
    if not units or all(u.size == 0 for u in units):
        raise SystemExit("error: the corpus holds no Claude Code transcripts")
    written = files = sessions = 0
    copy = 0
    while written < target_bytes:
        copy += 1
        tag = f"c{copy:03d}x".encode()
        for unit in units:
            if written >= target_bytes:
                break
            new = str(uuid.uuid5(_NAMESPACE, f"{copy}:{unit.project}:{unit.session_id}"))
            project_dir = root / "projects" / f"{unit.project}-copy{copy:02d}"
            for rel, data in unit.files:
                out = data.replace(unit.session_id.encode(), new.encode())
                out = _RESPONSE_ID.sub(rb'"\1' + tag, out)
                dest = project_dir / _copy_path(rel, unit.session_id, new)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(out)
                written += len(out)
                files += 1
            sessions += 1
    return written, files, sessions


def _is_response(line: bytes) -> bool:
    """A transcript line both tools count: an assistant line with usage (not a subagent's
    progress line quoting one, not a synthetic error message)."""
    if b'"usage"' not in line:
        return False
    try:
        obj = json.loads(line)
    except ValueError:
        return False
    message = obj.get("message") if isinstance(obj, dict) else None
    return (
        obj.get("type") == "assistant"
        and isinstance(message, dict)
        and isinstance(message.get("usage"), dict)
        and message.get("model") != "<synthetic>"
    )


def build_small_tree(
    root: Path, units: list[SessionUnit], files: int, target_bytes: int
) -> tuple[int, int, int]:
    """Write ``files`` small session files of about ``target_bytes / files`` each under
    ``root/projects``: the shape of a long-used history (thousands of short sessions),
    where per-file costs outweigh per-byte ones.

    Each file is a run of consecutive lines of a corpus main transcript, cut at line
    boundaries and holding at least one response, under a fresh session id (file name
    and every ``sessionId`` alike) with its response ids tagged for that file alone, so
    no response is shared between files. Files go 200 to a project folder. Returns
    (bytes, files, sessions) written.
    """
    pieces = [
        (unit.session_id, data.splitlines(keepends=True))
        for unit in units
        for rel, data in unit.files
        if len(rel.parts) == 1 and not rel.name.startswith("agent-")
    ]
    pieces = [(sid, lines) for sid, lines in pieces if lines]
    if not pieces:
        raise SystemExit("error: the corpus holds no Claude Code main transcripts")
    written = made = 0
    cursor = [0] * len(pieces)
    k = 0
    while made < files:
        # Long lines overshoot a file's share; the files after it make up for that.
        per_file = max(1, (target_bytes - written) // (files - made))
        old, lines = pieces[k % len(pieces)]
        start = cursor[k % len(pieces)]
        chunk: list[bytes] = []
        size = 0
        answered = False
        i = start
        while i < len(lines) and (size < per_file or not answered):
            chunk.append(lines[i])
            size += len(lines[i])
            answered = answered or _is_response(lines[i])
            i += 1
        cursor[k % len(pieces)] = 0 if i >= len(lines) else i
        k += 1
        if not answered:
            continue  # a transcript's tail without a response: no session of its own
        new = str(uuid.uuid5(_NAMESPACE, f"small:{made}"))
        tag = f"s{made:05d}x".encode()
        out = b"".join(chunk).replace(old.encode(), new.encode())
        out = _RESPONSE_ID.sub(rb'"\1' + tag, out)
        if not out.endswith(b"\n"):
            out += b"\n"
        dest = root / "projects" / f"small-{made // 200:03d}" / f"{new}.jsonl"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(out)
        written += len(out)
        made += 1
    return written, made, made


def shared_corpus() -> Path | None:
    """The shared corpus beside this checkout, or beside the main checkout of this git
    worktree; ``None`` when neither has one (a plain clone: the bundled corpus is used)."""
    places = [SHARED_CORPUS]
    common = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--path-format=absolute", "--git-common-dir"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    if common:
        places.append(Path(common).parent.parent / "shared" / "corpus" / "claude-code")
    return next((p for p in places if p.is_dir()), None)


def find_ccusage(prefixes: tuple[Path, ...] = (Path("/tmp/ccu"), CCUSAGE_CACHE)) -> list[str]:
    """``ccusage`` on PATH, else under one of ``prefixes``, else installed under the last."""
    on_path = shutil.which("ccusage")
    if on_path:
        return [on_path]
    for prefix in prefixes:
        script = prefix / "node_modules" / ".bin" / "ccusage"
        if script.exists():
            return [str(script)]
    if shutil.which("npm") is None:
        raise SystemExit("error: ccusage is not installed and npm is not available")
    target = prefixes[-1]
    print(f"installing {' '.join(CCUSAGE_PACKAGES)} into {target}", file=sys.stderr)
    subprocess.run(
        [
            "npm",
            "install",
            "--no-audit",
            "--no-fund",
            "--prefix",
            str(target),
            *CCUSAGE_PACKAGES,
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return [str(target / "node_modules" / ".bin" / "ccusage")]


def native_ccusage(script: str) -> str | None:
    """The static binary the npm ``ccusage`` script spawns, to time it without node."""
    base = Path(script).resolve().parent
    for up in (base, *base.parents):
        binary = up / "node_modules" / "@ccusage" / "ccusage-linux-x64" / "bin" / "ccusage"
        if binary.is_file():
            return str(binary)
    return None


@dataclass(slots=True)
class Tool:
    name: str
    argv: list[str]
    env: dict[str, str]
    wall_s: list[float] = field(default_factory=list)
    peak_kib: list[int] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    last_stdout: bytes = b""


def _children_of(pid: int) -> Iterator[int]:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces and parentheses; fields resume after the last ')'.
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            yield int(entry.name)


def _status_kib(pid: int, field: str) -> int:
    """A memory figure (``VmHWM``, ``VmRSS``) of a process from /proc, in KiB; 0 if gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _run_polling(argv: list[str], env: dict[str, str], out_path: Path) -> tuple[float, int]:
    """Fallback without /usr/bin/time: poll VmHWM of the process and its descendants."""
    with out_path.open("wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            argv, env=env, stdout=out, stderr=subprocess.PIPE, cwd=out_path.parent
        )
        peak = 0
        while proc.poll() is None:
            pids = [proc.pid]
            for pid in pids:
                peak = max(peak, _status_kib(pid, "VmHWM"))
                pids.extend(_children_of(pid))
            time.sleep(0.005)
        wall = time.perf_counter() - start
        stderr = proc.stderr.read() if proc.stderr else b""
    if proc.returncode != 0:
        raise SystemExit(f"error: {argv[0]} exited {proc.returncode}: {stderr.decode()[-2000:]}")
    return wall, peak


def tree_peak_kib(tool: Tool, scratch: Path, samples: int = 3) -> int:
    """Peak of the summed resident memory of the tool's whole process tree (workers,
    or node plus its binary), sampled every 2 ms; the median over ``samples`` runs.

    ``%M`` above is one process's peak, which hides worker processes; this is the fair
    figure when one tool forks and the other does not."""
    peaks = []
    for _ in range(samples):
        with (scratch / f"{tool.name}.tree").open("wb") as out:
            proc = subprocess.Popen(
                tool.argv, env=tool.env, stdout=out, stderr=subprocess.DEVNULL, cwd=scratch
            )
            peak = 0
            while proc.poll() is None:
                pids = [proc.pid]
                for pid in pids:
                    pids.extend(_children_of(pid))
                peak = max(peak, sum(_status_kib(pid, "VmRSS") for pid in pids))
                time.sleep(0.002)
        peaks.append(peak)
    return sorted(peaks)[len(peaks) // 2]


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(tool: Tool, scratch: Path) -> None:
    """One timed run. It starts in ``scratch``: ``python -m`` puts the working directory
    ahead of ``PYTHONPATH``, so a run from a checkout would measure that checkout."""
    out_path = scratch / f"{tool.name}.out"
    time_bin = "/usr/bin/time"
    # CPU time is a sum, so RUSAGE_CHILDREN deltas are exact per run (and include
    # processes the tool spawns and waits for); peak RSS is a maximum, so it is not.
    cpu_before = _children_cpu_s()
    if os.access(time_bin, os.X_OK):
        stats = scratch / f"{tool.name}.time"
        argv = [time_bin, "-f", "%e %M", "-o", str(stats), *tool.argv]
        with out_path.open("wb") as out:
            start = time.perf_counter()
            done = subprocess.run(
                argv, env=tool.env, stdout=out, stderr=subprocess.PIPE, cwd=scratch
            )
            wall = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(
                f"error: {tool.name} exited {done.returncode}: {done.stderr.decode()[-2000:]}"
            )
        # %M is the child's peak RSS in KiB; for a process that spawns another (the npm
        # ccusage script) it is the larger of the two peaks, not their sum.
        peak = int(stats.read_text().split()[-1])
    else:
        wall, peak = _run_polling(tool.argv, tool.env, out_path)
    tool.cpu_s.append(_children_cpu_s() - cpu_before)
    tool.wall_s.append(wall)
    tool.peak_kib.append(peak)
    tool.last_stdout = out_path.read_bytes()


Totals = dict[str, int]
Row = tuple[int, int, int, int]


def _add(total: Totals, row: Row) -> None:
    for name, value in zip(TOKEN_FIELDS, row, strict=True):
        total[name] += value


def cachediag_totals(stdout: bytes) -> tuple[Totals, dict[str, Row], dict[tuple[str, str], str]]:
    """Tree totals, per-session rows, and (project, agent file id) -> owning session."""
    total = dict.fromkeys(TOKEN_FIELDS, 0)
    per_session: dict[str, Row] = {}
    owners: dict[tuple[str, str], str] = {}
    for line in stdout.splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        t = obj["totals"]
        row = (
            t["input_tokens"],
            t["cache_read_tokens"],
            t["cache_creation_tokens"],
            t["output_tokens"],
        )
        _add(total, row)
        per_session[obj["session_id"]] = row
        # ccusage's projectPath is the project folder's name; cachediag's `project` is the
        # transcripts' cwd when they carry one, so the folder comes from the source path.
        folder = Path(obj["source"]).parent.name if obj.get("source") else ""
        for stream in obj["streams"]:
            owners[(folder, stream["id"])] = obj["session_id"]
    return total, per_session, owners


def ccusage_totals(
    stdout: bytes, owners: dict[tuple[str, str], str]
) -> tuple[Totals, dict[str, Row]]:
    """Tree totals and per-session rows, agent files folded into the session they serve.

    ccusage names a session after its file, so a Claude Code 2.0 ``agent-*.jsonl`` lying
    beside its session is a session of its own there; cachediag reads it as a stream of
    the session its lines name. Folding uses cachediag's stream list, so it only moves
    rows between sessions and cannot change the tree totals.
    """
    total = dict.fromkeys(TOKEN_FIELDS, 0)
    per_session: dict[str, list[int]] = {}
    for s in json.loads(stdout)["sessions"]:
        row = (s["inputTokens"], s["cacheReadTokens"], s["cacheCreationTokens"], s["outputTokens"])
        _add(total, row)
        sid = owners.get((s.get("projectPath") or "", s["sessionId"]), s["sessionId"])
        acc = per_session.setdefault(sid, [0, 0, 0, 0])
        for i, value in enumerate(row):
            acc[i] += value
    return total, {k: (v[0], v[1], v[2], v[3]) for k, v in per_session.items()}


def check_totals(ours: bytes, theirs: bytes) -> bool:
    our_total, our_sessions, owners = cachediag_totals(ours)
    their_total, their_sessions = ccusage_totals(theirs, owners)
    print("\nToken totals over the tree (sum of per-session totals):")
    print(f"  {'':16} {'cachediag':>16} {'ccusage':>16}")
    for name in TOKEN_FIELDS:
        flag = "" if our_total[name] == their_total[name] else "  <-- differs"
        print(f"  {name:16} {our_total[name]:>16,} {their_total[name]:>16,}{flag}")
    ids = our_sessions.keys() | their_sessions.keys()
    differ = sorted(s for s in ids if our_sessions.get(s) != their_sessions.get(s))
    print(
        f"  per session (agent-*.jsonl beside a session folded into it): "
        f"{len(ids) - len(differ)} of {len(ids)} sessions identical"
    )
    for sid in differ[:5]:
        print(
            f"    differs: {sid}: cachediag {our_sessions.get(sid)}, "
            f"ccusage {their_sessions.get(sid)}"
        )
    same = our_total == their_total and not differ
    print(f"  token totals agree: {'yes' if same else 'NO'}")
    return same


def _median(values: list[float] | list[int]) -> float:
    return float(statistics.median(values))


def print_table(tools: list[Tool], size_bytes: int) -> None:
    mib = size_bytes / MIB
    print(
        f"\n{'tool':<18} {'wall s':>7} {'min s':>7} {'MiB/s':>7} {'CPU s':>7} {'peak MiB':>9}"
        "   (medians unless named)"
    )
    for t in tools:
        wall = _median(t.wall_s)
        print(
            f"{t.name:<18} {wall:>7.3f} {min(t.wall_s):>7.3f} {mib / wall:>7.1f} "
            f"{_median(t.cpu_s):>7.3f} {_median(t.peak_kib) / 1024:>9.1f}"
        )
    ours = tools[0]
    for other in tools[1:]:
        time_ratio = _median(ours.wall_s) / _median(other.wall_s)
        cpu_ratio = _median(ours.cpu_s) / _median(other.cpu_s)
        mem_ratio = _median(ours.peak_kib) / _median(other.peak_kib)
        print(
            f"ratio {ours.name}/{other.name}: wall time {time_ratio:.2f}x, "
            f"CPU time {cpu_ratio:.2f}x, peak memory {mem_ratio:.2f}x"
        )
        # Run i of one tool against run i of the other, which ran next to it: steadier
        # than the ratio of medians when the machine's (or a tool's) speed drifts.
        pairs = [a / b for a, b in zip(ours.wall_s, other.wall_s, strict=True)]
        print(
            f"  wall time ratio pair by pair: median {statistics.median(pairs):.2f}x "
            f"(min {min(pairs):.2f}, max {max(pairs):.2f})"
        )


def cachediag_env() -> dict[str, str]:
    env = dict(os.environ)
    if not env.get("PYTHONPATH"):
        env["PYTHONPATH"] = str(REPO)
    return env


def add_install_option(parser: argparse.ArgumentParser) -> None:
    """``--install venv|none``, the same for every benchmark script."""
    parser.add_argument(
        "--install",
        choices=("venv", "none"),
        default="venv",
        help="venv: time cachediag pip-installed in a venv of its own, as users run it "
        "(default); none: python -m cachediag from this checkout",
    )


def installed(how: str, extras: str = "") -> tuple[list[str], dict[str, str]]:
    """The command to time and its environment: ``venv`` (as users run it, the default
    of every benchmark script) or ``none`` (``python -m cachediag`` from this checkout)."""
    if how == "venv":
        return install_in_venv(REPO, extras)
    return [sys.executable, "-m", "cachediag"], cachediag_env()


def install_in_venv(repo: Path = REPO, extras: str = "") -> tuple[list[str], dict[str, str]]:
    """``repo`` installed as users install it, in a venv kept between runs; returns the
    console script's argv and an environment that cannot reach the checkout.

    Users run the console script of an installed package; an interpreter's own ``.pth``
    start-up hooks (an editable install's finder, a sandbox's certificate hook: 27 ms per
    start on the machine of docs/benchmarks.md) belong to that machine, not to cachediag.
    The venv is keyed to the checkout and the Python version; every run installs the
    checkout's current files (tracked and new, as git sees them, so no stale ``build/``
    leftovers), and dependencies a failed earlier run left out are installed again.
    ``extras`` (e.g. ``"[proxy]"``) adds optional dependencies.
    """
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    key = hashlib.sha1(str(repo.resolve()).encode()).hexdigest()[:8]
    venv = Path(tempfile.gettempdir()) / f"cachediag-bench-venv-py{version}-{key}"
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q"]
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        # Built without isolation below, so no index is needed for the build itself.
        subprocess.run([*pip, "setuptools>=70.1"], check=True)
    with tempfile.TemporaryDirectory(prefix="cachediag-bench-src-") as src:
        copy_checkout(repo, Path(src))
        # A local folder is always built and installed anew; dependencies only when
        # missing (a first run, or one that failed half-way).
        subprocess.run(
            [*pip, "--no-build-isolation", src + extras], check=True, stdout=subprocess.DEVNULL
        )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return [str(venv / "bin" / "cachediag")], env


def copy_checkout(repo: Path, dest: Path) -> None:
    """The files of ``repo`` that git tracks or would track, as they are now."""
    listed = subprocess.run(
        ["git", "-C", str(repo), "ls-files", "-z", "-co", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = repo / name
        if source.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=100.0, help="tree size in MiB")
    parser.add_argument(
        "--small-files",
        type=int,
        metavar="N",
        help="a tree of N small session files (--size-mb in all) instead of whole copies",
    )
    parser.add_argument("--runs", type=int, default=5, help="timed runs per tool")
    parser.add_argument("--corpus", type=Path, help="folder of project folders to copy")
    parser.add_argument("--keep", action="store_true", help="keep the tree; print its path")
    parser.add_argument(
        "--no-native", action="store_true", help="skip timing ccusage's binary without node"
    )
    parser.add_argument(
        "--install",
        choices=("venv", "none"),
        default="venv",
        help="venv: pip-install this checkout into a venv and run its console script "
        "(default); none: python -m cachediag with PYTHONPATH",
    )
    args = parser.parse_args(argv)
    corpus = args.corpus or shared_corpus() or BUNDLED_CORPUS

    ccusage = find_ccusage()
    if args.install == "venv":
        command, env = install_in_venv()
        python = str(Path(command[0]).with_name("python"))
    else:
        command, env, python = [sys.executable, "-m", "cachediag"], cachediag_env(), sys.executable
    where = subprocess.run(
        [
            python,
            "-c",
            "import cachediag, cachediag.ingest.native as n; "
            "print(cachediag.__file__, '(C scanner)' if n.SCANNER else '(Python scanner)')",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tempfile.gettempdir(),
    ).stdout.strip()

    tmp = Path(tempfile.mkdtemp(prefix="cachediag-bench-"))
    try:
        tree = tmp / "tree"
        units, target = read_units(corpus), int(args.size_mb * MIB)
        if args.small_files:
            size, files, sessions = build_small_tree(tree, units, args.small_files, target)
        else:
            size, files, sessions = build_tree(tree, units, target)
        print(f"corpus:    {corpus}")
        print(
            f"tree:      {tree}/projects: {size / MIB:.1f} MiB, {files} files, {sessions} sessions"
        )
        print(f"cachediag: {' '.join(command)}: {where} (python {sys.version.split()[0]})")
        version = subprocess.run(
            [*ccusage, "--version"], capture_output=True, text=True, check=True
        ).stdout.strip()
        print(f"ccusage:   {ccusage[0]} ({version})")
        if version.split()[-1] != CCUSAGE_VERSION:
            print(f"warning: the benchmark is defined for ccusage {CCUSAGE_VERSION}")
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"machine:   {os.cpu_count()} CPUs, load average {load}")
        print(f"runs:      {args.runs} per tool, interleaved, after one warm-up run each")

        cc_env = dict(os.environ, CLAUDE_CONFIG_DIR=str(tree))
        cc_args = ["claude", "session", "--json", "--offline"]
        tools = [
            Tool(
                "cachediag",
                [*command, "analyze", "--json", str(tree / "projects")],
                # A price cache of its own, filled by the warm-up run as a user's is by
                # their first: a shared one that other installs (another genai-prices
                # build) rewrite would make every run load the price data again.
                dict(env, XDG_CACHE_HOME=str(tmp / "cache")),
            ),
            Tool("ccusage", [*ccusage, *cc_args], cc_env),
        ]
        binary = None if args.no_native else native_ccusage(ccusage[0])
        if binary is not None:
            tools.append(Tool("ccusage (no node)", [binary, *cc_args], cc_env))

        scratch = tmp / "out"
        scratch.mkdir()
        for t in tools:
            run_once(t, scratch)
            t.wall_s.clear()
            t.peak_kib.clear()
            t.cpu_s.clear()
        for i in range(args.runs):
            order = tools if i % 2 == 0 else tools[::-1]
            for t in order:
                run_once(t, scratch)

        print_table(tools, size)
        trees = {t.name: tree_peak_kib(t, scratch) for t in tools}
        print("\nwhole process tree, peak of summed RSS (sampled every 2 ms, median of 3):")
        for name, kib in trees.items():
            print(f"  {name:<18} {kib / 1024:>7.1f} MiB")
        ours = tools[0].name
        for name, kib in list(trees.items())[1:]:
            print(f"  ratio {ours}/{name}: {trees[ours] / kib:.2f}x")
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"\nload average at the end: {load}")
        agree = check_totals(tools[0].last_stdout, tools[1].last_stdout)
        if args.keep:
            print(f"\ntree kept at {tree}")
        return 0 if agree else 1
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
