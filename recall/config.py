"""Configuration: packaged defaults, then the user's ``$RECALL_HOME/config.toml``,
then ``RECALL_MODEL`` from the environment. Each effective value remembers its origin
(``recall config`` prints both).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from .chunking import ChunkConfig
from .paths import recall_home

PACKAGED = "packaged"


def packaged_config_text() -> str:
    return resources.files("recall").joinpath("default_config.toml").read_text(encoding="utf-8")


def user_config_path() -> Path:
    return Path(os.environ.get("RECALL_CONFIG") or recall_home() / "config.toml")


def calibration_path() -> Path:
    """Thresholds fitted on this RECALL_HOME's notes (recall.calibration): a layer between
    the packaged defaults and the user's config.toml."""
    return recall_home() / "calibration.toml"


class ConfigError(ValueError):
    pass


def _merge(base: dict, over: dict, origin: str, origins: dict[str, str], prefix: str = "") -> dict:
    out = dict(base)
    for key, value in over.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value, origin, origins, dotted + ".")
        else:
            out[key] = value
            for k in list(origins):
                if k.startswith(dotted + "."):
                    origins[k] = origin
            _record(value, dotted, origin, origins)
    return out


def _record(value: Any, dotted: str, origin: str, origins: dict[str, str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _record(v, f"{dotted}.{k}", origin, origins)
    else:
        origins[dotted] = origin


@dataclass
class Thresholds:
    gap_floor: float
    top_floor: float
    full_gap: float
    full_margin: float
    neg_weight: float = 0.0  # weight of (top - nearest negative) in the evidence; 0 = top alone
    source: str = "default"  # which table they came from
    origin: str = PACKAGED  # which file set top_floor (packaged, calibration.toml, config.toml)

    def as_dict(self) -> dict[str, float]:
        return {
            "gap_floor": self.gap_floor,
            "top_floor": self.top_floor,
            "full_gap": self.full_gap,
            "full_margin": self.full_margin,
            "neg_weight": self.neg_weight,
        }


@dataclass
class Config:
    data: dict[str, Any]
    origins: dict[str, str] = field(default_factory=dict)

    def get(self, dotted: str, default: Any = None) -> Any:
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    @property
    def model(self) -> str:
        return str(self.data["model"])

    @property
    def chunking(self) -> ChunkConfig:
        c = self.data.get("chunking", {})
        return ChunkConfig(int(c.get("chars", 700)), int(c.get("overlap", 100)), int(c.get("max_chunks", 6)))

    def thresholds(self, model_id: str) -> Thresholds:
        tables = self.data.get("thresholds", {})
        name = model_id if model_id in tables else "default"
        # A table may set only some keys (calibration.toml sets the floors): the rest
        # come from the default table.
        t = {**tables.get("default", {}), **tables[name]}
        return Thresholds(
            float(t["gap_floor"]), float(t["top_floor"]), float(t["full_gap"]), float(t["full_margin"]),
            float(t.get("neg_weight", 0.0)), name,
            self.origins.get(f"thresholds.{name}.top_floor", PACKAGED),
        )

    def apply_calibration(self, model_id: str, values: dict[str, Any], origin: str) -> None:
        """Take freshly calibrated thresholds as a unit, unless the user's own file sets any
        threshold of this model (then theirs stand, and none of these: a floor tuned for one
        rule means nothing under another)."""
        mine = (PACKAGED, origin)
        if any(o not in mine and not o.endswith("calibration.toml")
               for k, o in self.origins.items() if k.startswith(f"thresholds.{model_id}.")):
            return
        table = self.data.setdefault("thresholds", {}).setdefault(model_id, {})
        for key, value in values.items():
            table[key] = value
            self.origins[f"thresholds.{model_id}.{key}"] = origin

    def apply_calibration_file(self, path: Path) -> bool:
        """Apply every model table of a ``calibration.toml`` (``apply_calibration``). Only
        numbers are thresholds, and the provenance table is kept: a hand-edited value of
        another type is ignored, and a damaged file is ignored as a whole (the next
        ``recall calibrate`` rewrites it) rather than breaking every command."""
        try:
            tables = tomllib.loads(path.read_text(encoding="utf-8")).get("thresholds", {})
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            return False
        if not isinstance(tables, dict):
            return False
        for model_id, table in tables.items():
            if isinstance(table, dict):
                values: dict[str, Any] = {k: float(v) for k, v in table.items()
                                          if isinstance(v, int | float) and not isinstance(v, bool)}
                if isinstance(table.get("provenance"), dict):
                    values["provenance"] = table["provenance"]
                self.apply_calibration(model_id, values, str(path))
        return True

    def selector(self) -> dict[str, Any]:
        return dict(self.data.get("selector", {}))

    def rule_dirs(self) -> list[Path]:
        return [Path(p).expanduser() for p in self.data.get("sources", {}).get("rules", [])]


def load_config(path: Path | None = None, calibrated_layer: bool = True) -> Config:
    """Packaged defaults, then the user's file, then ``RECALL_MODEL``; then the thresholds of
    ``calibration.toml`` for every model whose table the user did not set (unless
    ``calibrated_layer`` is False: what the thresholds would be without self-calibration)."""
    origins: dict[str, str] = {}
    data = tomllib.loads(packaged_config_text())
    _record(data, "", PACKAGED, origins)
    origins = {k.lstrip("."): v for k, v in origins.items()}
    user = path or user_config_path()
    if user.exists():
        try:
            over = tomllib.loads(user.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{user} is not valid TOML ({exc}); fix that line, or move the file aside "
                              "to use the defaults (`recall config` then shows the settings in effect)") from exc
        data = _merge(data, over, str(user), origins)
    if os.environ.get("RECALL_MODEL"):
        data["model"] = os.environ["RECALL_MODEL"]
        origins["model"] = "env RECALL_MODEL"
    config = Config(data, origins)
    if calibrated_layer and calibration_path().exists():
        config.apply_calibration_file(calibration_path())  # never over a model table the user set
    return config
