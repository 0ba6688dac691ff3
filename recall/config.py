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
    source: str = "default"  # which table they came from

    def as_dict(self) -> dict[str, float]:
        return {
            "gap_floor": self.gap_floor,
            "top_floor": self.top_floor,
            "full_gap": self.full_gap,
            "full_margin": self.full_margin,
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
        t = tables[name]
        return Thresholds(
            float(t["gap_floor"]), float(t["top_floor"]), float(t["full_gap"]), float(t["full_margin"]), name
        )

    def selector(self) -> dict[str, Any]:
        return dict(self.data.get("selector", {}))

    def rule_dirs(self) -> list[Path]:
        return [Path(p).expanduser() for p in self.data.get("sources", {}).get("rules", [])]


def load_config(path: Path | None = None) -> Config:
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
    return Config(data, origins)
