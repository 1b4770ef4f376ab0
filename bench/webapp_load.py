"""Load on the web app: concurrent annotators labelling K/DA pairs, SQLite vs PostgreSQL.

For each backend (a fresh SQLite file in a temporary folder; a throw-away PostgreSQL
server started like the tests do, ``tests/postgres.py``, or a fresh database on
``--postgres-url``): ``--annotators`` accounts, each a member of one project and assigned
``--items-per-annotator`` pair items of its own (real Korean text from
../shared/data/detox/kda_ko.csv, written straight into the database, as an upload's
``add_items`` would). The app (``rolecall.web.create_app``, as ``rolecall serve`` runs it:
one uvicorn process, sync routes in its thread pool) is served on 127.0.0.1 by a
subprocess; this process drives it over loopback with one ``httpx.AsyncClient`` per
annotator (its own cookies and keep-alive connection, as a browser has). Each annotator
logs in once before the clock starts (scrypt costs ~50 ms a login), then, for
``--seconds``, loops without think time (``--think-ms`` adds some) over:

1. ``GET /`` -- the home page: a trivial authenticated read (**the baseline**);
2. ``GET /items/{id}`` -- the label form (its ``csrf`` and ``shown_at`` are read from it);
3. ``POST /items/{id}/label`` with random yes/no answers -- expecting 303 to the next item.

No request starts after the window; the ones in flight are waited for (``--timeout``
bounds each), so a backend takes setup + ``--seconds`` + at most ``--timeout``.

Lost writes, counted: every item is labelled at most once per annotator, so every
acknowledged write (a 303) must be its own ``annotations`` row. After the server stops,
the rows are read back and compared with what each client was told was saved:
*lost* = acknowledged (item, annotator) pairs without a row; *wrong* = rows whose answers
differ from the acknowledged ones; *unacknowledged* = rows for writes whose answer never
came (a timeout or an error after the commit: not lost, but reported). Errors (any other
status, timeouts, refused connections) are counted per kind with the answer's message, and
the server's log is scanned for exceptions; a failed label is retried from its form.

Double-submit bursts (after the window, same server): a separate annotator opens each of
``--burst-forms`` label forms once and sends it ``--burst-submits`` times at once (a
double click, exaggerated): every submit must get its 303 (no server error), and each
form must end as exactly one ``annotations`` row. Then every other state-changing form
(chat, Fix, ask again, save, project, upload, SSA items, account, member) is sent
``--burst-submits`` times at once and must leave the rows of one submit and ask the bot
once per chat form, and ``--login-burst`` wrong passwords for one account sent at once
may have at most the per-account limit checked (``bench/form_bursts.py``). The project's
bot there is the suite's fake LLM with a 0.2 s delay (``tests/fakes.py``).

Baseline in the same run, same concurrency, interleaved with the writes (so both see the
same noise on this shared machine): the latency of ``GET /``. Printed per backend: p50,
p95, p99 of each request kind (successful answers only) and the ratios label p50 / home
p50 and label p95 / home p95, with requests/s and acknowledged writes/s. Both processes
share the machine's cores with the database server: absolute numbers are a floor, the
ratios are what compare across runs. Compare runs with the same ``--items-per-annotator``
(the queue's length is part of what a label POST does). The last line is JSON, with a
``targets`` object ({"NAME": {"value", "target", "met"}}: no lost or wrong writes, no
server errors, the bursts' redirects, one effect per form, no second bot call, at most the
limit of wrong passwords checked, per backend); the exit status
is 1 when a target is missed or a backend could not be measured.

Usage: python bench/webapp_load.py [--seconds 60] [--annotators 50]
       [--backends sqlite,postgres] [--postgres-url postgresql+psycopg://user@host/db]
       [--items-per-annotator 400] [--think-ms 0] [--timeout 30]
       [--burst-forms 5] [--burst-submits 30] [--login-burst 30]
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import io
import json
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml
from sqlalchemy import select

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ is not a package
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # tests/, for its fake LLM
import form_bursts  # noqa: E402

# the projects' bots name the fake LLM, and a bot's model string is checked where it is
# stored: registered here too, not only in the server process
import tests.fakes  # noqa: E402, F401
from rolecall.formats.kda import read_kda_csv
from rolecall.store import (
    Annotation,
    Assignment,
    Item,
    ItemKind,
    Project,
    ProjectMember,
    connect,
    session,
    upgrade,
)
from rolecall.web.auth import add_user
from rolecall.web.settings import BotConfig, ProjectSettings

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
SPEC = ROOT / "examples" / "carecall" / "spec.yaml"
PASSWORD = "bench-password-1"
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
SHOWN_AT = re.compile(r'name="shown_at" value="([^"]+)"')
MESSAGE = re.compile(r'id="error"><p>(.*?)</p>', re.S)
# an exception's last line, and the statement a database error names
EXCEPTION_LINE = re.compile(r"^([\w.]+(Error|Exception|Timeout)\b.*|\[SQL: .*)$", re.M)
# the app as `rolecall serve` runs it, in its own process (its own GIL and core)
SERVER = (
    "import sys, uvicorn\n"
    "from rolecall.store import connect\n"
    "from rolecall.web import create_app\n"
    "import tests.fakes\n"  # the bursts' bot: the fake LLM (form_bursts.bot_model)
    "uvicorn.run(create_app(connect(sys.argv[1])), host='127.0.0.1',"
    " port=int(sys.argv[2]), log_level='warning', access_log=False)\n"
)
KINDS = ("home", "item", "label")
NAMES = {"home": "GET / (baseline)", "item": "GET /items/{id}", "label": "POST label"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


BURST_USER = "burst"


def populate(
    url: str, annotators: int, per_annotator: int, burst_forms: int, bot: str
) -> tuple[list, int]:
    """Schema, project (its bot: ``bot``), accounts and items; returns [(username, user id,
    item ids)], the double-submit annotator (``BURST_USER``, with ``burst_forms`` items)
    last, and the project's id."""
    pairs = read_kda_csv(DATA / "detox" / "kda_ko.csv")
    engine = connect(url)
    try:
        upgrade(engine)
        settings = ProjectSettings(
            spec=yaml.safe_load(SPEC.read_text(encoding="utf-8")), bot=BotConfig(model=bot)
        )
        people = []
        with session(engine) as db:
            project = Project(name="load", settings=settings.model_dump(mode="json"))
            db.add(project)
            db.flush()
            for name in [f"ann{a:03d}" for a in range(annotators)] + [BURST_USER]:
                user = add_user(db, name, PASSWORD)
                db.add(ProjectMember(project_id=project.id, user_id=user.id))
                people.append((user.username, user.id))
            items = []
            for n in range(annotators * per_annotator + burst_forms):
                pair = pairs[n % len(pairs)]
                items.append(
                    Item(
                        project_id=project.id,
                        kind=ItemKind.PAIR,
                        payload=pair.model_dump(mode="json"),
                        source=f"kda_ko.csv:{n % len(pairs) + 2}",
                    )
                )
            db.add_all(items)
            db.flush()
            owned = [[] for _ in people]
            assignments = []
            for n, item in enumerate(items):  # round-robin, as add_items does; burst last
                who = len(people) - 1 if n >= annotators * per_annotator else n % annotators
                owned[who].append(item.id)
                assignments.append(Assignment(item_id=item.id, user_id=people[who][1]))
            db.add_all(assignments)
            project_id = project.id
        return [(name, uid, ids) for (name, uid), ids in zip(people, owned)], project_id
    finally:
        engine.dispose()


@contextmanager
def serving(url: str, log_path: Path):
    """The app in a uvicorn subprocess on a free loopback port; yields its base URL."""
    port = free_port()
    with open(log_path, "wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-c", SERVER, url, str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/login", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(
                    "the web app did not start:\n" + log_path.read_text(errors="replace")[-3000:]
                )
            time.sleep(0.1)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@dataclass
class Annotator:
    username: str
    user_id: int
    items: list[int]
    client: httpx.AsyncClient | None = None
    acked: dict[int, dict] = field(default_factory=dict)  # item id -> the answers saved
    latencies: dict[str, list[float]] = field(default_factory=lambda: {kind: [] for kind in KINDS})
    errors: Counter = field(default_factory=Counter)
    server_errors: int = 0  # answers with a 5xx status
    requests: int = 0
    exhausted: bool = False


def _problem(response: httpx.Response) -> str:
    found = MESSAGE.search(response.text)
    text = found.group(1) if found else response.text[:120]
    return (
        f"{response.status_code} {response.request.method} "
        f"{re.sub(r'/[0-9]+', '/N', response.request.url.path)}: {' '.join(text.split())}"
    )


async def timed(who: Annotator, kind: str, expected: int, call) -> httpx.Response | None:
    """One request: its latency if it got the expected status, else an error counted."""
    who.requests += 1
    start = time.perf_counter()
    try:
        response = await call
    except httpx.HTTPError as exc:
        who.errors[f"{kind}: {type(exc).__name__} {exc}"[:200]] += 1
        return None
    elapsed = time.perf_counter() - start
    if response.status_code != expected:
        who.errors[_problem(response)[:200]] += 1
        who.server_errors += response.status_code >= 500
        return None
    who.latencies[kind].append(elapsed)
    return response


async def log_in(who: Annotator, base: str, timeout: float, gate: asyncio.Semaphore) -> None:
    who.client = httpx.AsyncClient(base_url=base, timeout=timeout, follow_redirects=False)
    async with gate:
        form = await who.client.get("/login")
        response = await who.client.post(
            "/login",
            data={
                "username": who.username,
                "password": PASSWORD,
                "next": "/",
                "csrf": CSRF.search(form.text).group(1),
            },
        )
    if response.status_code != 303 or "rolecall_session" not in who.client.cookies:
        raise SystemExit(
            f"{who.username} could not log in: {response.status_code} {response.text[:300]}"
        )


async def annotate(who: Annotator, deadline: float, think: float, seed: int) -> None:
    rng = random.Random(seed)
    client, item = who.client, who.items[0]

    def open_window() -> bool:
        return time.monotonic() < deadline

    while open_window():
        if await timed(who, "home", 200, client.get("/")) is None:
            await asyncio.sleep(0.05)
            continue
        if not open_window():
            break
        form = await timed(who, "item", 200, client.get(f"/items/{item}"))
        if form is None:
            await asyncio.sleep(0.05)
            continue
        if think:
            await asyncio.sleep(think)
        if not open_window():
            break
        answers = {"consistent": rng.choice(["yes", "no"]), "offensive": rng.choice(["yes", "no"])}
        data = {
            "csrf": CSRF.search(form.text).group(1),
            "shown_at": SHOWN_AT.search(form.text).group(1),
            **answers,
        }
        saved = await timed(who, "label", 303, client.post(f"/items/{item}/label", data=data))
        if saved is None:
            await asyncio.sleep(0.05)
            continue  # an annotator reloads the form and labels again
        who.acked[item] = {k: v == "yes" for k, v in answers.items()}
        target = saved.headers.get("location", "")
        if not target.startswith("/items/"):
            who.exhausted = True  # the queue is empty: --items-per-annotator is too small
            break
        item = int(target.rsplit("/", 1)[1])


async def drive(
    base: str, people: list[Annotator], seconds: float, think: float, timeout: float
) -> float:
    gate = asyncio.Semaphore(4)  # logins are CPU-bound on the server: no need to pile up
    await asyncio.gather(*(log_in(who, base, timeout, gate) for who in people))
    start = time.monotonic()
    try:
        await asyncio.gather(
            *(annotate(who, start + seconds, think, n) for n, who in enumerate(people))
        )
        return time.monotonic() - start
    finally:
        await asyncio.gather(*(who.client.aclose() for who in people))


async def double_submit(base: str, who: Annotator, submits: int, timeout: float) -> dict:
    """Each of ``who``'s forms opened once and sent ``submits`` times at once."""
    await log_in(who, base, timeout, asyncio.Semaphore(1))
    statuses: Counter = Counter()
    try:
        for item in who.items:
            form = await timed(who, "item", 200, who.client.get(f"/items/{item}"))
            if form is None:
                statuses["form not shown"] += 1
                continue
            data = {
                "csrf": CSRF.search(form.text).group(1),
                "shown_at": SHOWN_AT.search(form.text).group(1),
                "consistent": "yes",
                "offensive": "no",
            }
            answers = await asyncio.gather(
                *(who.client.post(f"/items/{item}/label", data=data) for _ in range(submits)),
                return_exceptions=True,
            )
            for answer in answers:
                statuses[
                    type(answer).__name__ if isinstance(answer, Exception) else answer.status_code
                ] += 1
    finally:
        await who.client.aclose()
    return {
        "forms": len(who.items),
        "submits": len(who.items) * submits,
        "redirects": statuses.get(303, 0),
        "server_errors": sum(n for s, n in statuses.items() if not isinstance(s, int) or s >= 500),
        "statuses": {str(s): n for s, n in statuses.items()},
    }


def burst_rows(url: str, who: Annotator) -> list[int]:
    """The number of ``annotations`` rows of each of ``who``'s forms."""
    engine = connect(url)
    try:
        with session(engine) as db:
            found = Counter(
                db.scalars(select(Annotation.item_id).where(Annotation.user_id == who.user_id))
            )
    finally:
        engine.dispose()
    return [found.get(item, 0) for item in who.items]


def check_writes(url: str, people: list[Annotator]) -> dict:
    """Compare the rows in the database with the writes each client was told were saved."""
    engine = connect(url)
    try:
        with session(engine) as db:
            rows = db.execute(
                select(Annotation.user_id, Annotation.item_id, Annotation.payload).where(
                    Annotation.kind == "pair", Annotation.user_id.in_([w.user_id for w in people])
                )
            ).all()
    finally:
        engine.dispose()
    stored: dict[int, dict[int, dict]] = {}
    for user_id, item_id, payload in rows:
        stored.setdefault(user_id, {})[item_id] = payload
    acked = lost = wrong = unacked = 0
    for who in people:
        mine = stored.get(who.user_id, {})
        acked += len(who.acked)
        lost += sum(item not in mine for item in who.acked)
        wrong += sum(item in mine and mine[item] != answers for item, answers in who.acked.items())
        unacked += sum(item not in who.acked for item in mine)
    return {
        "acknowledged": acked,
        "stored": len(rows),
        "lost": lost,
        "wrong": wrong,
        "unacknowledged_stored": unacked,
    }


def percentiles(seconds: list[float]) -> dict:
    if not seconds:
        return {"n": 0, "p50_ms": None, "p95_ms": None, "p99_ms": None}
    if len(seconds) == 1:
        cuts = [seconds[0]] * 99
    else:
        cuts = statistics.quantiles(seconds, n=100, method="inclusive")
    return {
        "n": len(seconds),
        "p50_ms": round(cuts[49] * 1000, 2),
        "p95_ms": round(cuts[94] * 1000, 2),
        "p99_ms": round(cuts[98] * 1000, 2),
    }


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a is not None and b else None


async def other_forms(
    base: str, url: str, chatter: str, project_id: int, args: argparse.Namespace, calls_file: Path
) -> dict:
    """Every form but the label's sent ``--burst-submits`` times at once
    (``form_bursts``): per form its answers and (rows found, rows of one submit), and the
    bot calls beyond one reply per chat form."""
    spec = SPEC.read_text(encoding="utf-8")
    category = ProjectSettings(spec=yaml.safe_load(spec)).error_categories[0]
    pairs = read_kda_csv(DATA / "detox" / "kda_ko.csv")[:3]
    table = io.StringIO()
    csv.writer(table, lineterminator="\n").writerows(
        [("neutral", "implicit"), *((p.neutral, p.toxic) for p in pairs)]
    )
    chat, chat_id, per_reply = await form_bursts.chat_forms(
        base, chatter, PASSWORD, project_id, args.burst_submits, args.timeout, calls_file,
        category, url,
    )  # fmt: skip
    asked = form_bursts.calls(calls_file)
    admin = await form_bursts.admin_forms(
        base, PASSWORD, project_id, args.burst_submits, args.timeout, spec, table.getvalue()
    )
    forms = chat | admin
    for name, (found, expected) in form_bursts.effects(
        url, project_id, chat_id, len(pairs)
    ).items():
        if name in forms:
            forms[name] |= {"rows": found, "expected_rows": expected}
    # the warm-up reply, then one reply each for the message, Fix and ask again
    extra = asked - 4 * per_reply
    return {"forms": forms, "bot_calls_per_reply": per_reply, "extra_bot_calls": extra}


def run_backend(name: str, url: str, args: argparse.Namespace, folder: Path) -> dict:
    print(
        f"\n== {name}: {args.annotators} annotators x {args.items_per_annotator} items, "
        f"{args.seconds:g} s ==",
        flush=True,
    )
    began = time.monotonic()
    calls_file = folder / f"bot-calls-{name}"
    owned, project_id = populate(
        url,
        args.annotators,
        args.items_per_annotator,
        args.burst_forms,
        form_bursts.bot_model(calls_file),
    )
    form_bursts.add_accounts(url, PASSWORD)
    people = [Annotator(username, user_id, items) for username, user_id, items in owned]
    burster = people.pop()
    print(
        f"setup (schema, {len(people)} accounts, {sum(len(o[2]) for o in owned)} items): "
        f"{time.monotonic() - began:.1f} s",
        flush=True,
    )
    log_path = folder / f"server-{name}.log"
    with serving(url, log_path) as base:
        elapsed = asyncio.run(drive(base, people, args.seconds, args.think_ms / 1000, args.timeout))
        burst = asyncio.run(double_submit(base, burster, args.burst_submits, args.timeout))
        forms = asyncio.run(other_forms(base, url, burster.username, project_id, args, calls_file))
        throttle = asyncio.run(
            form_bursts.throttle_burst(base, args.login_burst, PASSWORD, args.timeout)
        )
    writes = check_writes(url, people)
    rows = burst_rows(url, burster)
    burst |= {"rows_per_form": rows, "forms_with_one_row": sum(n == 1 for n in rows)}
    errors = sum((who.errors for who in people), Counter())
    server_log = log_path.read_text(errors="replace")
    exceptions = Counter(m.group(0)[:200] for m in EXCEPTION_LINE.finditer(server_log))
    latency = {
        kind: percentiles([s for who in people for s in who.latencies[kind]]) for kind in KINDS
    }
    requests = sum(who.requests for who in people)
    result = {
        "backend": name,
        "annotators": args.annotators,
        "seconds": round(elapsed, 2),
        "requests": requests,
        "requests_per_s": round(requests / elapsed, 1),
        **writes,
        "writes_per_s": round(writes["acknowledged"] / elapsed, 1),
        "errors": sum(errors.values()),
        "exhausted_annotators": sum(w.exhausted for w in people),
        "server_errors": sum(w.server_errors for w in people),
        "double_submit": burst,
        "form_bursts": forms,
        "throttle": throttle,
        "latency": latency,
        "label_p50_over_home_p50": ratio(latency["label"]["p50_ms"], latency["home"]["p50_ms"]),
        "label_p95_over_home_p95": ratio(latency["label"]["p95_ms"], latency["home"]["p95_ms"]),
        "item_p50_over_home_p50": ratio(latency["item"]["p50_ms"], latency["home"]["p50_ms"]),
        "error_kinds": dict(errors.most_common(10)),
        "server_exceptions": dict(exceptions.most_common(10)),
    }
    report(result)
    return result


def report(r: dict) -> None:
    print(
        f"window {r['seconds']:.1f} s (until the last in-flight answer): "
        f"{r['requests']} requests ({r['requests_per_s']}/s), "
        f"label writes acknowledged {r['acknowledged']} ({r['writes_per_s']}/s), "
        f"stored {r['stored']}, lost {r['lost']}, wrong {r['wrong']}, "
        f"stored without acknowledgement {r['unacknowledged_stored']}, "
        f"errors {r['errors']}, annotators out of items {r['exhausted_annotators']}"
    )
    base = r["latency"]["home"]
    print(
        f"{'request':22s}{'n':>8s}{'p50 ms':>10s}{'p95 ms':>10s}{'p99 ms':>10s}"
        f"{'p50/base':>10s}{'p95/base':>10s}"
    )
    for kind in KINDS:
        value = r["latency"][kind]
        cells = [
            f"{value[k]:10.1f}" if value[k] is not None else f"{'-':>10s}"
            for k in ("p50_ms", "p95_ms", "p99_ms")
        ]
        ratios = [ratio(value[k], base[k]) for k in ("p50_ms", "p95_ms")]
        print(
            f"{NAMES[kind]:22s}{value['n']:8d}{''.join(cells)}"
            + "".join(f"{x:10.2f}" if x is not None else f"{'-':>10s}" for x in ratios)
        )
    b = r["double_submit"]
    print(
        f"double-submit burst: {b['forms']} forms x {b['submits'] // max(b['forms'], 1)} "
        f"submits at once: {b['redirects']} redirects, {b['server_errors']} server errors, "
        f"{b['forms_with_one_row']}/{b['forms']} forms with one row (statuses "
        f"{b['statuses']})"
    )
    f = r["form_bursts"]
    print(
        f"{'form sent at once':20s}{'submits':>8s}{'303s':>6s}{'5xx':>5s}{'rows':>6s}{'of 1':>6s}"
    )
    for name, value in f["forms"].items():
        print(
            f"{name:20s}{value['submits']:8d}{value['redirects']:6d}{value['server_errors']:5d}"
            f"{value.get('rows', '-'):>6}{value.get('expected_rows', '-'):>6}"
        )
    print(
        f"bot calls: {f['bot_calls_per_reply']} per reply, {f['extra_bot_calls']} beyond one "
        "reply per chat form"
    )
    t = r["throttle"]
    print(
        f"login burst: {t['attempts']} wrong passwords at once: {t['checked']} checked "
        f"(limit {t['limit']}), {t['refused']} refused, {t['server_errors']} server errors; "
        f"the right password afterwards: {t['right_password_after']}"
    )
    for text, count in r["error_kinds"].items():
        print(f"  error x{count}: {text}")
    for text, count in r["server_exceptions"].items():
        print(f"  server log x{count}: {text}")


@contextmanager
def postgres_database(server_url: str | None):
    """A fresh database on ``server_url``, or on a throw-away server; dropped afterwards."""
    sys.path.insert(0, str(ROOT))
    from tests.postgres import TempPostgres, _admin, _with_database, find_pg_bindir

    server = None
    try:
        if server_url is None:
            bindir = find_pg_bindir()
            if bindir is None:
                raise RuntimeError(
                    "no PostgreSQL server binaries (initdb, pg_ctl, postgres); "
                    "install postgresql, set PG_BINDIR or pass --postgres-url"
                )
            server = TempPostgres(bindir)
            try:
                server_url = server.start()
            except BaseException as exc:  # pytest.fail's exception is a BaseException
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                raise RuntimeError(f"PostgreSQL did not start: {exc}") from None
        name = f"bench_{uuid.uuid4().hex[:10]}"
        _admin(server_url, f"CREATE DATABASE {name}")
        try:
            yield _with_database(server_url, name)
        finally:
            _admin(server_url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    finally:
        if server is not None:
            server.stop()


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument(
        "--backends", default="sqlite,postgres", help="comma-separated: sqlite, postgres"
    )
    parser.add_argument(
        "--postgres-url",
        default=None,
        help="a server to use instead of a throw-away one (needs CREATE "
        "DATABASE); a fresh database is made on it and dropped",
    )
    parser.add_argument("--items-per-annotator", type=int, default=400)
    parser.add_argument(
        "--think-ms", type=float, default=0.0, help="pause between showing an item and labelling it"
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    parser.add_argument(
        "--burst-forms",
        type=int,
        default=5,
        help="label forms each sent --burst-submits times at once",
    )
    parser.add_argument("--burst-submits", type=int, default=30)
    parser.add_argument(
        "--login-burst", type=int, default=30, help="wrong passwords sent at once for one account"
    )
    args = parser.parse_args()
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = set(args.backends) - {"sqlite", "postgres"}
    if unknown:
        parser.error(f"unknown backend(s) {', '.join(sorted(unknown))}: use sqlite, postgres")
    if (
        min(
            args.annotators,
            args.items_per_annotator,
            args.burst_forms,
            args.burst_submits,
            args.login_burst,
        )
        < 1
        or args.seconds <= 0
    ):
        parser.error(
            "--annotators, --items-per-annotator, --seconds, --burst-forms, "
            "--burst-submits and --login-burst must be positive"
        )
    return args


def main() -> None:
    args = arguments()
    results, failures = [], {}
    folder = Path(tempfile.mkdtemp(prefix="rolecall-webload-"))
    try:
        for backend in args.backends:
            if backend == "sqlite":
                results.append(
                    run_backend("sqlite", f"sqlite:///{folder / 'load.sqlite'}", args, folder)
                )
                continue
            try:
                with postgres_database(args.postgres_url) as url:
                    results.append(run_backend("postgres", url, args, folder))
            except RuntimeError as exc:
                failures["postgres"] = str(exc)
                print(f"\npostgres: not measured: {exc}", flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    print(
        f"\n{'backend':10s}{'writes/s':>10s}{'acked':>8s}{'stored':>8s}{'lost':>6s}"
        f"{'errors':>8s}{'label p50':>11s}{'label p95':>11s}{'home p50':>10s}"
        f"{'p50 ratio':>11s}{'p95 ratio':>11s}"
    )
    for r in results:
        label, home = r["latency"]["label"], r["latency"]["home"]
        print(
            f"{r['backend']:10s}{r['writes_per_s']:10.1f}{r['acknowledged']:8d}"
            f"{r['stored']:8d}{r['lost']:6d}{r['errors']:8d}"
            f"{label['p50_ms'] or 0:11.1f}{label['p95_ms'] or 0:11.1f}"
            f"{home['p50_ms'] or 0:10.1f}{r['label_p50_over_home_p50'] or 0:11.2f}"
            f"{r['label_p95_over_home_p95'] or 0:11.2f}"
        )
    print(
        "ratios: label POST latency over GET / latency (the baseline), same run, same "
        f"concurrency; {os.cpu_count()} CPU cores shared by client, server and database"
    )
    goals = targets(results)
    print(
        json.dumps(
            {
                "bench": "webapp_load",
                "annotators": args.annotators,
                "seconds": args.seconds,
                "items_per_annotator": args.items_per_annotator,
                "think_ms": args.think_ms,
                "cpus": os.cpu_count(),
                "results": results,
                "not_measured": failures,
                "targets": goals,
            },
            ensure_ascii=False,
        )
    )
    broken = failures or not all(goal["met"] for goal in goals.values())
    sys.exit(1 if broken else 0)


def targets(results: list[dict]) -> dict:
    """Per backend: no lost or wrong write, no server error (the load and the bursts),
    every burst submit redirected, one row per label form, the rows of one submit per
    other form (none duplicated, none missing), no second bot call, at most the limit of
    a login burst checked."""
    goals = {}
    for r in results:
        name, burst = r["backend"], r["double_submit"]
        rows = burst["rows_per_form"]
        forms, throttle = r["form_bursts"]["forms"].values(), r["throttle"]
        off = [v.get("rows", -1) - v.get("expected_rows", 0) for v in forms]
        submits = sum(v["submits"] for v in forms)
        redirects = sum(v["redirects"] for v in forms)
        for key, value, target, met in (
            ("lost_writes", r["lost"], "== 0", r["lost"] == 0),
            ("wrong_writes", r["wrong"], "== 0", r["wrong"] == 0),
            ("server_errors", r["server_errors"], "== 0", r["server_errors"] == 0),
            (
                "double_submit_server_errors",
                burst["server_errors"],
                "== 0",
                burst["server_errors"] == 0,
            ),
            (
                "double_submit_redirects",
                burst["redirects"],
                f"== {burst['submits']}",
                burst["redirects"] == burst["submits"],
            ),
            (
                "double_submit_rows_per_form",
                max(rows, default=0),
                "== 1 for every form",
                bool(rows) and all(n == 1 for n in rows),
            ),
            (
                "form_burst_server_errors",
                sum(v["server_errors"] for v in forms),
                "== 0",
                all(v["server_errors"] == 0 for v in forms),
            ),
            ("form_burst_redirects", redirects, f"== {submits}", redirects == submits),
            (
                "form_burst_duplicate_rows",
                sum(max(d, 0) for d in off),
                "== 0",
                all(d <= 0 for d in off),
            ),
            (
                "form_burst_missing_rows",
                sum(max(-d, 0) for d in off),
                "== 0",
                all(d >= 0 for d in off),
            ),
            (
                "form_burst_extra_bot_calls",
                r["form_bursts"]["extra_bot_calls"],
                "== 0",
                r["form_bursts"]["extra_bot_calls"] == 0,
            ),
            (
                "login_burst_attempts_checked",
                throttle["checked"],
                f"<= {throttle['limit']}",
                throttle["checked"] <= throttle["limit"],
            ),
            (
                "login_burst_server_errors",
                throttle["server_errors"],
                "== 0",
                throttle["server_errors"] == 0,
            ),
            (
                "login_burst_locks_the_account",
                throttle["right_password_after"],
                "== 429",
                throttle["right_password_after"] == 429,
            ),
        ):
            goals[f"{name}_{key}"] = {"value": value, "target": target, "met": met}
    return goals


if __name__ == "__main__":
    main()
