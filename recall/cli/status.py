"""`recall status` and `recall config`: what is in force, and where each value came from."""

from __future__ import annotations

import json
import time

import click

from recall.cli.common import fail_cleanly, recall_app, say, say_json
from recall.config.load import load_config, named_missing
from recall.privacy.paths import user_config_path
from recall.privacy.safetext import one_line


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@fail_cleanly
def status(as_json: bool) -> None:
    """Model and platform, counts, last index time, daemon state (and its device)."""
    app = recall_app()
    st = app.status()
    info: dict = {"recall_home": str(st.home), **st.model}
    info["counts"] = st.counts
    info["indexes"] = [
        {"model_id": m, "generation": g, "built": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)),
         "chunks": c}
        for m, g, t, c in st.runs
    ]
    if st.problems:
        info["index_problems"] = st.problems
    if not st.runs and not any(st.counts.values()) and st.indexing is None:
        # a home removed, or another folder named (a space at RECALL_HOME's end): said, not only zeros
        info["nothing_indexed"] = ("nothing is indexed in this home: `recall index` indexes your notes (or is "
                                   "RECALL_HOME not the folder you meant?)")
    if st.indexing is not None:
        from recall.indexing.progress import describe

        info["indexing"] = st.indexing if as_json else describe(st.indexing)
    if (behind := _behind_disk(app, st)) is not None:
        info["notes_on_disk"] = behind
    old = app.switched_from(st.runs)
    if old is not None:
        info["model_switch"] = (f"the notes were last indexed with {old}, not with {st.model['model_id']}: "
                                "the daemon reads and embeds them again when it starts (`recall index` does it now)")
    from recall.ipc.client import daemon_status

    info["daemon"] = daemon_status()
    if (full := _disk_full(st.home)) is not None:  # no daemon can start: say why
        info["disk"] = full
    info["thresholds"] = _thresholds_in_force(app)
    from recall.agents.install import budget_past_wait

    if (past := budget_past_wait(app.config.daemon.hook_budget_ms)) is not None:
        info["hook_budget"] = past.removeprefix("note: ")
    info.update(_agent_entries())
    from recall.embedding.models import model_id_of

    if unused := app.config.unused_model_tables(model_id_of(app.config.model, app.config.gemini.dimensions)):
        info["unused_settings"] = unused
    if (missing := named_missing()) is not None:
        info["config"] = missing
    if as_json:
        say_json(info, indent=2)
        return
    for key, value in info.items():
        if key == "thresholds":
            say(f"thresholds: {value['words']}")
            continue
        say(one_line(f"{key}: {_words(value)}"))  # one line each, whatever a path holds (a newline in RECALL_HOME)


def _behind_disk(app, st) -> str | None:
    """A line when note files changed in the indexed folders after this model's last index
    (``recall.indexing.ondisk.since_index``: a stat per note, bounded), with the command that
    indexes them again; None when none did."""
    from recall.indexing.ondisk import since_index

    built = [t for m, _g, t, _c in st.runs if m == st.model["model_id"]]
    since = since_index(app.store, max(built)) if built else None
    return None if since is None else since.line()


def _agent_entries() -> dict[str, str]:
    """Lines on the agents' entries for recall here that an older recall wrote, or that run a
    Python that is gone."""
    from pathlib import Path

    from recall.agents.stale import broken_entries, stale_entries

    out = {}
    if stale := stale_entries(Path.cwd()):
        out["agent_entries"] = (f"{', '.join(map(str, stale))} hold(s) a command an older recall registered: run "
                                "`recall install` again (with --agent and --project as you first did)")
    from recall.agents.checks import both_scopes, switched_off
    from recall.agents.registry import AGENTS

    said = [line for agent in AGENTS for line in [*switched_off(agent, Path.cwd()), both_scopes(agent, Path.cwd())]
            if line is not None]
    if said:
        out["agent_switches"] = "; ".join(line.removeprefix("warning: ") for line in said)
    if broken := broken_entries(Path.cwd()):
        out["agent_hooks"] = "; ".join(
            f"{path} runs {python}, and {what}; run `recall install` again from the python you use now (with "
            "--agent and --project as you first did), or `recall uninstall`" for path, python, what in broken)
    return out


def _disk_full(home) -> str | None:
    """A line when the disk holding RECALL_HOME is full (`recall status` said only that no daemon ran)."""
    from recall.store.errors import NEARLY_FULL, free_bytes

    if (free := free_bytes(home)) is None or free >= NEARLY_FULL:
        return None
    return (f"no space left ({free:,} bytes free on the disk holding {home}): no daemon starts and nothing is "
            "indexed; free some space on it, then run `recall index`")


def _words(value) -> str:
    """A value of ``recall status`` as a person reads it: ``notes=12, chunks=80``, not a Python
    dict; a list one item after another; yes and no."""
    if isinstance(value, dict):
        return ", ".join(f"{k}={_when(v) if k == 'started' else _words(v)}" for k, v in value.items()) or "none"
    if isinstance(value, list):
        return "; ".join(_words(v) for v in value) or "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):  # a load time, an uptime: not 0.9928382090001833 (a first-hour tester's, stop 58)
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def _when(value) -> str:
    """An epoch time (a daemon's start) as the local time it was, not 1796627789.58."""
    import datetime as dt

    if not isinstance(value, int | float) or isinstance(value, bool):
        return _words(value)
    try:
        return dt.datetime.fromtimestamp(value).astimezone().isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return str(value)


def _kept_packaged(prov) -> str:
    """What a calibration that kept the packaged floor says of it: the folder's own negatives it
    had, the number it needs, the silence it measured (it was called "self-calibrated" with no
    word of either; stop 48, Y-05)."""
    from recall.cli.common import own_negatives_words
    from recall.ranking.calibration import MIN_OWN_NEGATIVES

    by = prov.get("negatives_by_origin")
    own = sum(v for k, v in by.items() if k != "bank" and isinstance(v, int)) if isinstance(by, dict) else None
    near = prov.get("near_misses") if isinstance(prov.get("near_misses"), int) else own
    if own is None or near is None or near >= MIN_OWN_NEGATIVES:
        return ""
    counted = own_negatives_words(own, near, "the folder's")
    silence, target = prov.get("calib_silence_rate"), prov.get("target_silence")
    missed = (f", silence {silence:.2f} on them against the target {target:g}"
              if isinstance(silence, float) and isinstance(target, float) and silence < target else "")
    return f"; the packaged floor kept: {counted}, under the {MIN_OWN_NEGATIVES} a fit needs{missed}"


def _hidden_notes(prov: dict) -> str:
    """Where the floor came from when the notes each hidden in turn set it (recall.ranking.hidden_notes)."""
    share = prov.get("hidden_notes_silence")
    return f"; floor from the notes each hidden in turn, {share:g} of their questions silent" if isinstance(
        share, float) else ""


def _thresholds_in_force(app) -> dict:
    """Which thresholds the selector uses for the configured model, and where they came from."""
    from recall.embedding.models import model_id_of

    model_id = model_id_of(app.config.model, app.config.gemini.dimensions)
    t = app.config.thresholds_for(model_id)
    prov = t.provenance or {}
    if t.origin.endswith("calibration.toml") and prov.get("calibrated"):
        how = (f"self-calibrated {prov['calibrated']} on {prov.get('positives', 0)} held-out note questions and "
               f"{prov.get('negatives', 0)} known unrelated messages ({prov.get('mode')}; target silence "
               f"{prov.get('target_silence')}{_hidden_notes(prov)}) in {t.origin}{_kept_packaged(prov)}")
    elif t.origin == "packaged":
        from recall.config.load import apply_calibration_file
        from recall.ranking.calibration_file import FILE

        cal = app.home / FILE
        why = (f"{cal} is damaged and ignored: `recall calibrate` writes it again"
               if cal.exists() and apply_calibration_file(app.config, cal) is None
               else "not calibrated yet: `recall index` or `recall calibrate`")
        how = f"the packaged [{t.source}] table ({why})"
    else:
        how = f"set by you in {t.origin}"
    return {"model_id": model_id, "table": t.source, "origin": t.origin, **t.as_dict(),
            "words": f"top_floor {t.top_floor:.4f}, neg_weight {t.neg_weight:g}: {how}"}


@click.command("config")
@click.option("--path", "show_path", is_flag=True, help="Print the user config file's path only.")
@click.option("--defaults", "show_defaults", is_flag=True,
              help="Print the packaged defaults: every key with its default, its range and a comment.")
@fail_cleanly
def config_cmd(show_path: bool, show_defaults: bool) -> None:
    """Print the effective config, each value with the file it came from."""
    if show_path:
        say(user_config_path(), masked=False)  # read back by scripts: the path as it is
        return
    if show_defaults:
        from recall.config.load import defaults_with_ranges

        say(defaults_with_ranges().rstrip("\n"), masked=False)
        return
    from recall.embedding.models import model_id_of
    from recall.errors import HomeUnusable
    from recall.privacy.paths import recall_home
    from recall.privacy.trust import home_problem
    from recall.team.connect import hide_password

    if (problem := home_problem(recall_home())) is not None:  # what every other command refuses to use
        raise HomeUnusable(problem)
    config = load_config()
    if (missing := named_missing()) is not None:
        say(missing, err=True)
    for key, value, origin in config.entries():  # pasted into bug reports: a [team] url's password masked
        shown = json.dumps(value, ensure_ascii=False)  # (say masks the rest, as every line it prints)
        say(f"{key} = {hide_password(shown, value) if isinstance(value, str) else shown}    # {origin}")
    from recall.agents.install import budget_past_wait

    for line in config.unused_model_tables(model_id_of(config.model, config.gemini.dimensions)):
        say(line, err=True)
    if (past := budget_past_wait(config.daemon.hook_budget_ms)) is not None:
        say(past, err=True)

