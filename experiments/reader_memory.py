"""Peak memory of goenv's file readers, on honest and hostile inputs, as a multiple of the input's
size: the table in docs/limits.md (section reader-memory) and docs/results/reader_memory.json.

    python experiments/reader_memory.py          # about 3 minutes on 2 cores

Each case runs in a fresh process. It prepares its input, resets the process's peak memory to
its current size (/proc/self/clear_refs) and reads; the peak's growth (VmHWM) is the reader's.
The bound held by the tests is 4x the input plus 64 MB (docs/limits.md).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from doc_sections import ROOT, section_file, write_section  # noqa: E402

from goenv.files import write_atomic  # noqa: E402
from goenv.provenance import made_by  # noqa: E402

SLACK = 64 << 20
RESULTS = ROOT / "docs" / "results" / "reader_memory.json"

# The child: a case's code sets `size` (the input's bytes) and defines read(); the peak is read's alone.
CHILD = """
import json, os, struct, sys, tempfile
import numpy as np
import goenv
TESTS = {tests!r}
sys.path.insert(0, TESTS)
work = tempfile.mkdtemp(prefix="goenv-reader-memory-")

def vm_hwm():
    with open("/proc/self/status") as f:
        return 1024 * int(next(line for line in f if line.startswith("VmHWM:")).split()[1])

{prepare}
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
before = vm_hwm()
try:
    read()
    outcome = "read"
except goenv.Error as error:
    outcome = type(error).__name__ + ": " + " ".join(str(error).split())
except BaseException as error:  # noqa: BLE001  (what the table must show, whatever it is)
    outcome = "NOT A GOENV ERROR " + type(error).__name__ + ": " + str(error)[:100]
outcome = outcome.replace(work + "/", "")  # the case's temporary folder says nothing
print(json.dumps({{"outcome": outcome, "peak": vm_hwm() - before, "bytes": size}}))
"""

GRAPH = """
graph = goenv.datasets.load("gnmt-8")
path = os.path.join(work, "g.goenv")
graph.save(path)
del graph
size = os.path.getsize(path)
"""

CHECKPOINT = """
import goenv.agents
from goenv.agents.agent import native
native()  # libtorch loaded before the measure
shipped = os.path.join(os.path.dirname(goenv.agents.__file__), "shipped", "go-placement.agent")
data = open(shipped, "rb").read()
head = struct.unpack_from("<Q", data)[0]
header = json.loads(data[8:8 + head])
"""

CONVERTER = """
from goenv.agents import convert
from goenv.agents.agent import native
from legacy_pickles import legacy_file, module, storage, tensor, whole
native()
"""

LABELS = """
import hashlib
import pyarrow as pa, pyarrow.parquet as pq
from goenv.labels import folder
graphs, root = os.path.join(work, "graphs"), os.path.join(work, "labels")
goenv.datasets.generate("random-layered", 8, graphs, seed=7, shard_size=4, progress=False)
goenv.datasets.label(graphs, root, decisions_per_graph=8, shard_size=4, progress=False)
manifest_path = os.path.join(root, "manifest.json")
manifest = json.load(open(manifest_path))
folder_bytes = sum(os.path.getsize(os.path.join(root, name)) for name in os.listdir(root))

def read_everything():
    labels = goenv.datasets.open_labels(root)
    for i in range(len(labels)):
        labels.graph(i)
        labels.decisions(i)
    labels.verify()
"""

ENV = """
env = goenv.make("placement-gnmt-8", horizon=4)
env.reset(seed=0)
env.step(env.action_space.sample())
state = env.get_state()
size = len(state)
"""

VECTOR = """
venv = goenv.make_vec("placement-transformer-xl-2", num_envs=6, num_threads=1, horizon=4)
venv.reset(seed=0)
venv.step(np.stack([venv.single_action_space.sample() for _ in range(6)]))
state = venv.get_state()
size = len(state)
"""

def names_case(count: int, what: str) -> tuple:
    """A graph JSON file of one node whose names column holds `count` empty names."""
    return ("graph JSON", what, "", f"""
path = os.path.join(work, "names.json")
graph = json.loads(goenv.Graph.from_arrays(np.zeros((2, 0), np.int64), flops=np.ones(1)).to_json())
graph["graph"]["names"] = [""] * {count}
open(path, "w").write(json.dumps(graph))
size = os.path.getsize(path)
def read(): goenv.Graph.load(path)
""")


# (reader, input, setup shared by the reader's cases, this case's preparation).
CASES = [
    ("graph file", "gnmt-8 (binary)", GRAPH, "def read(): goenv.Graph.load(path)"),
    ("graph file", "gnmt-8 with its names count set to 2^40, checksum resealed", GRAPH, """
from helpers import checksum64
data = open(path, "rb").read()
at = 28 + 1 + 4 + 8 + len("gnmt-8")  # envelope, endianness, version, name: then the names count
payload = data[28:at] + struct.pack("<Q", 1 << 40) + data[at + 8:]
open(path, "wb").write(data[:12] + struct.pack("<QQ", len(payload), checksum64(payload)) + payload)
def read(): goenv.Graph.load(path)
"""),
    ("graph JSON", "64 MiB of '['", "", """
path = os.path.join(work, "deep.json")
open(path, "w").write("[" * (64 << 20))
size = os.path.getsize(path)
def read(): goenv.Graph.load(path)
"""),
    names_case(5_000_000, "5 million empty names (a graph of 1 node)"),
    names_case(2_000_000, "2 million empty names, under the node limit (a graph of 1 node)"),
    ("Graph.from_arrays", "a broadcast flops array claiming 2e8 nodes (8 bytes)", "", """
flops = np.broadcast_to(np.float64(1.0), (200_000_000,))
size = 8
def read(): goenv.Graph.from_arrays(np.zeros((2, 0), np.int64), flops=flops)
"""),
    ("checkpoint", "the shipped GO placer", CHECKPOINT, """
size = len(data)
def read(): goenv.agents.load_bytes(data)
"""),
    ("checkpoint", "no tensors, options asking for hidden=1024 and no layers", CHECKPOINT, """
meta = header["__metadata__"]
meta.update({"config.hidden": "1024", "config.sage_layers": "0", "config.attention_layers": "0",
             "checksum": "4ea0537ff367da6b"})  # the checksum of no data (core/hash.h's hash_bytes)
text = json.dumps({"__metadata__": meta}).encode()
data = struct.pack("<Q", len(text)) + text
size = len(data)
def read(): goenv.agents.load_bytes(data)
"""),
    ("checkpoint", "a 60 MiB header of '['", CHECKPOINT, """
data = struct.pack("<Q", 60 << 20) + b"[" * (60 << 20)
size = len(data)
def read(): goenv.agents.load_bytes(data)
"""),
    ("legacy converter", "the 0.3 GO placer (format 2)", CONVERTER, """
data = open(os.path.join(TESTS, "data", "legacy", "go-placement-2dev-format2.agent"), "rb").read()
size = len(data)
def read(): convert.convert_bytes(data)
"""),
    ("legacy converter", "a stride-0 tensor of 2^29 floats over one stored float", CONVERTER, """
data = legacy_file(whole(module([("w", tensor(storage("0", 1), 0, [1 << 29], [0]))])), {"0": bytes(4)})
size = len(data)
def read(): convert.convert_bytes(data)
"""),
    ("labelled dataset", "8 graphs x 8 decisions, read whole and verified", LABELS, """
size = folder_bytes
def read(): read_everything()
"""),
    ("labelled dataset", "a manifest whose count is 10^15", LABELS, """
manifest["count"] = 10**15
open(manifest_path, "w").write(json.dumps(manifest))
size = os.path.getsize(manifest_path)
def read(): read_everything()
"""),
    ("labelled dataset", "a labels shard of 200 million constant rows, resealed", LABELS, """
shard = os.path.join(root, folder.shard_file("labels", 0))
pq.write_table(pa.table({"graph_id": pa.array(np.zeros(200_000_000, np.int64))}), shard)
data = open(shard, "rb").read()
manifest["shards"][0]["files"]["labels"].update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
open(manifest_path, "w").write(json.dumps(manifest))
size = len(data)
del data
def read(): read_everything()
"""),
    ("labelled dataset", "6 million constant rows whose Parquet footer says they decode to 1 byte, resealed", LABELS,
     """
rows, k = 6_000_000, 1_500_000  # shard 0: 4 graphs x k decisions, as the edited manifest says
lists = pa.ListArray.from_arrays(pa.array(np.arange(0, 16 * rows + 1, 16, dtype=np.int32)),
                                 pa.array(np.zeros(16 * rows)))
shard = os.path.join(root, folder.shard_file("labels", 0))
pq.write_table(pa.table({"graph_id": pa.array(np.zeros(rows, np.int64)), "peak_memory": lists}), shard,
               row_group_size=rows)
del lists
data = open(shard, "rb").read()
declared = pq.ParquetFile(shard).metadata.row_group(0).total_byte_size

def varint(n):  # Thrift's compact protocol: a zigzag varint after field header 0x16 (i64 field 3)
    n, out = (n << 1) ^ (n >> 63), bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))

footer_size = struct.unpack("<I", data[-8:-4])[0]
footer = data[-8 - footer_size:-8].replace(b"\x16" + varint(declared), b"\x16" + varint(1), 1)
data = data[:-8 - footer_size] + footer + struct.pack("<I", len(footer)) + b"PAR1"
open(shard, "wb").write(data)
manifest["config"]["decisions_per_graph"] = k
for record in manifest["shards"]:
    record["rows"] = record["count"] * k
manifest["shards"][0]["files"]["labels"].update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
open(manifest_path, "w").write(json.dumps(manifest))
size = len(data)
del data
def read(): read_everything()
"""),
    ("env snapshot", "placement-gnmt-8 after a step", ENV, "def read(): env.set_state(state)"),
    ("env snapshot", "the same with one flipped byte", ENV, """
state = state[:100] + bytes([state[100] ^ 1]) + state[101:]
def read(): env.set_state(state)
"""),
    ("vector snapshot", "6 envs", VECTOR, "def read(): venv.set_state(state)"),
    ("vector snapshot", "6 envs, one flipped byte in env 5's state", VECTOR, """
at = len(state) - 8 - (32 + 21 * 6) - 200
state = state[:at] + bytes([state[at] ^ 1]) + state[at + 1:]
def read(): venv.set_state(state)
"""),
]


def measure(setup: str, prepare: str) -> dict:
    tests = str(ROOT / "tests" / "python")
    code = CHILD.format(tests=tests, prepare=textwrap.dedent(setup) + textwrap.dedent(prepare))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        return {"outcome": f"process died (status {done.returncode}): {done.stderr.strip()[-200:]}", "peak": None,
                "bytes": None}
    return json.loads(done.stdout.strip().splitlines()[-1])


def megabytes(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 1e5 else f"{n:,} B"


def table(rows: list[dict], made: dict) -> str:
    lines = ["| reader | input | input size | outcome | peak growth | bound (4x + 64 MB) |", "|---|---|---|---|---|---|"]
    for row in rows:
        peak, size = row["peak"], row["bytes"]
        within = "—" if peak is None else ("within" if peak <= 4 * size + SLACK else "**over**")
        ratio = "" if peak is None or size < 1e5 else f" ({peak / size:.1f}x)"
        outcome = row["outcome"] if len(row["outcome"]) <= 90 else row["outcome"][:88] + "…"
        outcome = outcome.replace("|", "\\|")
        lines.append(f"| {row['reader']} | {row['input']} | {megabytes(size) if size is not None else '—'} | "
                     f"{outcome} | {megabytes(peak) if peak is not None else '—'}{ratio} | {within} |")
    commit = (made.get("commit") or "unknown")[:7] + (" with local changes" if made.get("dirty") else "")
    lines.append("")
    lines.append(f"Measured by `python experiments/reader_memory.py` at {commit}: each case in a fresh process, the "
                 "peak's growth while reading (VmHWM after `/proc/self/clear_refs`).")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-write", action="store_true", help="print the table; write neither docs nor results")
    args = parser.parse_args(argv)
    page = None if args.no_write else section_file("reader-memory")
    rows = []
    for reader, what, setup, prepare in CASES:
        row = {"reader": reader, "input": what, **measure(setup, prepare)}
        print(f"{reader} | {what}: {row['outcome'][:80]}, peak {row['peak']}", flush=True)
        rows.append(row)
    made = made_by()
    text = table(rows, made)
    print(text)
    if page is not None:
        write_atomic(RESULTS, (json.dumps({"made_by": made, "cases": rows}, indent=1) + "\n").encode(),
                     what="results")
        write_section(page, "reader-memory", text)
    over = [row for row in rows if row["peak"] is None or row["peak"] > 4 * row["bytes"] + SLACK]
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
