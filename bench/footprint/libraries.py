"""The real-library footprint corpus: peaks made by library calls as a user writes them.

Each shape is one call of a library (pandas, scikit-learn, SciPy, Pillow, sqlite3, torch's
DataLoader, ElementTree, json, a thread pool, pyarrow) rising about 100-250 MB above where
its call starts, with the protocol of ``protocol.py``: a declared kind and state, a
``# PEAK LINE`` on the shape's own line that called the library (or the workers' line), a
setup outside the measured call that prepares the input and calls the library once on a
tiny one (lazy imports and first-call initialisation stay out of the rise). Retained shapes
keep their result in ``HELD`` and drop their own entry first. ``ground_truth.py --corpus
libraries`` measures each one's cold call and its call after one warm-up without the
plugin; ``run.py --corpus libraries`` scores the plugin on them.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import xml.etree.ElementTree as ElementTree
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from protocol import HELD, MiB, Shape, corpus_names, data_file, registrar

__all__ = ["HELD", "SHAPES", "corpus"]

SHAPES: dict[str, Shape] = {}
shape = registrar(SHAPES)


def corpus() -> list[str]:
    """The shapes measured by default, in order."""
    return corpus_names(SHAPES)


# --- pandas -----------------------------------------------------------------------------

CSV_ROWS, CSV_COLUMNS = 600_000, 20


def _write_csv(path: Path) -> None:
    rng = np.random.default_rng(0)
    values = rng.integers(0, 10, size=(CSV_ROWS, CSV_COLUMNS))
    with path.open("w") as out:
        out.write(",".join(f"c{j}" for j in range(CSV_COLUMNS)) + "\n")
        for start in range(0, CSV_ROWS, 100_000):
            block = values[start:start + 100_000]
            out.write("\n".join(",".join(map(str, row)) for row in block.tolist()) + "\n")


def _csv_file() -> tuple[Path]:
    import pandas as pd

    path = data_file(f"ints_{CSV_ROWS}x{CSV_COLUMNS}.csv", _write_csv)
    pd.read_csv(path, nrows=100)  # pandas' first call, unmeasured
    return (path,)


@shape("python", "partly retained", setup=_csv_file, needs="pandas")
def pandas_read_csv(path: Path) -> int:
    """pandas ``read_csv`` of a 600,000 x 20 table of small integers (24 MB of text, 92 MiB
    as int64) into a frame that is kept, replacing the previous one: pandas 3 parses it in a
    pool of threads, into pieces that it then joins (the pieces are transient, the frame is
    kept: partly retained)."""
    import pandas as pd

    frame = pd.read_csv(path)  # PEAK LINE
    HELD["pandas_read_csv"] = frame
    return len(frame)


def _merge_frames() -> tuple[Any, Any]:
    import pandas as pd

    rng = np.random.default_rng(1)
    rows, keys = 4_500_000, 300_000
    left = pd.DataFrame({"key": rng.integers(0, keys, rows), "x": rng.random(rows)})
    right = pd.DataFrame({"key": np.arange(keys), "a": rng.random(keys),
                          "b": rng.random(keys), "c": rng.random(keys)})
    left.head(100).merge(right.head(100), on="key")  # the merge's first call
    return left, right


@shape("python", "transient", setup=_merge_frames, needs="pandas")
def pandas_merge(left: Any, right: Any) -> int:
    """An inner ``merge`` of 4,500,000 rows with 300,000 keys of 3 columns: a frame of 5
    columns (172 MiB) and the join's indexers, dropped before the call returns."""
    merged = left.merge(right, on="key")  # PEAK LINE
    return len(merged)


# --- scikit-learn, SciPy ----------------------------------------------------------------

def _points() -> tuple[Any]:
    from sklearn.metrics import pairwise_distances

    points = np.random.default_rng(2).random((4400, 16))
    pairwise_distances(points[:10])  # the first call: sklearn's config, threadpoolctl
    return (points,)


@shape("python", "transient", setup=_points, needs="sklearn")
def sklearn_pairwise(points: Any) -> float:
    """``sklearn.metrics.pairwise_distances`` of 4,400 points in 16 dimensions: a 148 MiB
    matrix, reduced to its mean and dropped before the call returns."""
    from sklearn.metrics import pairwise_distances

    distances = pairwise_distances(points)  # PEAK LINE
    return float(distances.mean())


def _sparse() -> tuple[Any]:
    import scipy.sparse

    matrix = scipy.sparse.random(4400, 4400, density=0.01, format="csr", random_state=3)
    matrix[:10].toarray()  # the first call
    return (matrix,)


@shape("python", "retained", setup=_sparse, needs="scipy")
def scipy_toarray(matrix: Any) -> int:
    """SciPy's ``toarray()`` of a 4,400 x 4,400 CSR matrix with 1% of its entries set: a
    dense 148 MiB array that is kept, replacing the previous one."""
    dense = matrix.toarray()  # PEAK LINE
    HELD["scipy_toarray"] = dense
    return int(dense.shape[0])


# --- Pillow -----------------------------------------------------------------------------

IMAGE_SIDE = 6000


def _png_file() -> tuple[Path]:
    from PIL import Image

    def write(path: Path) -> None:
        ramp = np.arange(IMAGE_SIDE, dtype=np.uint32)
        pixels = np.empty((IMAGE_SIDE, IMAGE_SIDE, 4), dtype=np.uint8)
        pixels[..., 0] = (ramp[None, :] * 7) % 251
        pixels[..., 1] = (ramp[:, None] * 3) % 241
        pixels[..., 2] = (ramp[None, :] ^ ramp[:, None]) % 256
        pixels[..., 3] = 255
        Image.fromarray(pixels, "RGBA").save(path, format="PNG")

    path = data_file(f"image_{IMAGE_SIDE}.png", write)
    with Image.open(path) as first:  # the decoder's first call: plugins, zlib
        first.reduce(1).crop((0, 0, 8, 8))
    return (path,)


@shape("native", "transient", setup=_png_file, needs="PIL")
def pillow_decode(path: Path) -> int:
    """Pillow decodes a 6,000 x 6,000 RGBA PNG (137 MiB of pixels, in Pillow's own blocks
    of the C heap), takes its histogram and closes it before the call returns."""
    from PIL import Image

    with Image.open(path) as image:
        image.load()  # PEAK LINE
        return len(image.histogram())


# --- sqlite3 ----------------------------------------------------------------------------

def _sqlite_rows(count: int) -> Any:
    return ((i, f"name-{i:09d}", i * 0.25, "x" * 100) for i in range(count))


def _sqlite_setup() -> tuple[()]:
    connection = sqlite3.connect(":memory:")
    connection.execute("create table t (id integer primary key, name text, score real, "
                       "pad text)")
    connection.executemany("insert into t values (?, ?, ?, ?)", _sqlite_rows(100))
    connection.close()
    return ()


@shape("native", "retained", setup=_sqlite_setup)
def sqlite_memory() -> int:
    """An in-memory sqlite3 database of 1,000,000 rows (an integer key, two text columns,
    a real), kept open, replacing the previous one: sqlite's pages in the C heap."""
    connection = sqlite3.connect(":memory:")
    connection.execute("pragma cache_size = -1000000")  # the whole database in its cache
    connection.execute("create table t (id integer primary key, name text, score real, "
                       "pad text)")
    connection.executemany("insert into t values (?, ?, ?, ?)",  # PEAK LINE
                           _sqlite_rows(1_000_000))
    connection.commit()
    HELD["sqlite_memory"] = connection
    return 1_000_000


# --- torch DataLoader -------------------------------------------------------------------

def _loader() -> tuple[Any]:
    import torch.utils.data

    rows = torch.arange(2048 * 14_000, dtype=torch.float32).reshape(2048, 14_000)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(rows),
                                         batch_size=2048, num_workers=0)
    small = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(rows[:8]),
                                        batch_size=8)
    next(iter(small))  # the first batch: the sampler's and collate's first call
    return (loader,)


@shape("native", "retained", setup=_loader, needs="torch")
def torch_dataloader(loader: Any) -> int:
    """One batch of a torch ``DataLoader`` (``num_workers=0``) over a ``TensorDataset``:
    2,048 rows of 14,000 floats stacked by the default collate into a 109 MiB CPU tensor
    that is kept, replacing the previous one."""
    (batch,) = next(iter(loader))  # PEAK LINE
    HELD["torch_dataloader"] = batch
    return int(batch.shape[0])


# --- ElementTree, json ------------------------------------------------------------------

XML_RECORDS = 170_000


def _xml_file() -> tuple[Path]:
    def write(path: Path) -> None:
        with path.open("w") as out:
            out.write("<records>\n")
            for i in range(XML_RECORDS):
                out.write(f'<record id="{i}" kind="k{i % 7}"><name>item {i}</name>'
                          f"<value>{i * 0.5}</value><tag>t{i % 100}</tag></record>\n")
            out.write("</records>\n")

    path = data_file(f"records_{XML_RECORDS}.xml", write)
    ElementTree.fromstring("<a><b x='1'>c</b></a>")  # the parser's first call
    return (path,)


@shape("python", "retained", setup=_xml_file)
def etree_parse(path: Path) -> int:
    """``xml.etree.ElementTree.parse`` of an 18 MB file of 170,000 records (680,000
    elements) into a tree that is kept, replacing the previous one."""
    tree = ElementTree.parse(path)  # PEAK LINE
    HELD["etree_parse"] = tree
    return len(tree.getroot())


def _json_document() -> tuple[str]:
    rows = [{"id": i, "user": f"u{i % 5000}", "score": i * 0.25, "ok": i % 3 == 0,
             "tags": ["a", "b"]} for i in range(520_000)]
    text = json.dumps(rows)
    json.loads(text[:2000].rsplit("}", 1)[0] + "}]")  # the decoder's first call
    return (text,)


@shape("python", "transient", setup=_json_document)
def json_loads_records(text: str) -> int:
    """``json.loads`` of a 40 MB text of 520,000 records (a dict of five keys and a list
    each), counted and dropped before the call returns."""
    records = json.loads(text)  # PEAK LINE
    return sum(1 for record in records if record["ok"])


# --- a thread pool ----------------------------------------------------------------------

WORKERS = 8
WORKER_BYTES = 19 * MiB


@shape("python", "transient")
def thread_pool_barrier() -> float:
    """Eight workers of a ``ThreadPoolExecutor``, each holding a 19 MiB ``np.full`` until
    all eight hold theirs (a ``threading.Barrier``): 152 MiB allocated in the workers,
    freed before the call returns."""
    barrier = threading.Barrier(WORKERS)

    def hold_at_barrier(index: int) -> float:  # the workers' own function, in the shape's
        block = np.full(WORKER_BYTES // 8, float(index))  # PEAK LINE
        barrier.wait()
        return float(block[0])

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = [pool.submit(hold_at_barrier, i) for i in range(WORKERS)]
        return sum(future.result() for future in futures)


# --- a library with its own allocator ---------------------------------------------------

def _arrow_pool_stats() -> dict[str, int]:
    import pyarrow

    pool = pyarrow.default_memory_pool()
    return {"in_use": pool.bytes_allocated(), "pool_peak": pool.max_memory()}


def _arrow_chunks() -> tuple[Any]:
    import pyarrow

    # Columns of numpy arrays (arrow wraps them without a copy, outside its pool), each in
    # 40 chunks of 25,000 rows, as a reader of many small files leaves them.
    rng = np.random.default_rng(4)
    columns = {f"c{j}": pyarrow.chunked_array([rng.integers(0, 1000, 25_000)
                                               for _ in range(40)]) for j in range(20)}
    table = pyarrow.table(columns)
    table.slice(0, 10).combine_chunks()  # the first call
    return (table,)


def _arrow_allocator() -> str:
    import pyarrow

    return f"pyarrow's default memory pool ({pyarrow.default_memory_pool().backend_name})"


@shape("native", "retained", setup=_arrow_chunks, needs="pyarrow",
       allocator=_arrow_allocator, allocator_stats=_arrow_pool_stats)
def pyarrow_combine(table: Any) -> int:
    """pyarrow's ``Table.combine_chunks()`` of 1,000,000 rows of 20 int64 columns in 40
    chunks each: 153 MiB of contiguous columns allocated in pyarrow's default memory pool
    (its own allocator), kept, replacing the previous table."""
    combined = table.combine_chunks()  # PEAK LINE
    HELD["pyarrow_combine"] = combined
    return int(combined.num_rows)


# --- clean --------------------------------------------------------------------------------

def _small_frame() -> tuple[Any]:
    import pandas as pd

    frame = pd.DataFrame({"a": np.arange(2000), "b": np.arange(2000) % 7})
    frame.groupby("b").sum()
    return (frame,)


@shape(None, None, fails=False, setup=_small_frame, needs="pandas")
def clean_pandas(frame: Any) -> int:
    """A groupby of a 2,000-row frame made in the setup: allocates and frees almost
    nothing."""
    return len(frame.groupby("b").sum())
