"""Every number a command line takes has its range, and a float's range refuses nan and inf.

An outside tester's `recall log -n 99999999999999999999` was a traceback (OverflowError),
`query -k -2` listed all but the last two notes, and `serve --wait nan` waited "nan s":
click's plain INT and FLOAT take any number, and its FloatRange lets nan through (every
comparison with nan is false). ``recall.cli.common.Finite`` is the float type that does not.
"""

from __future__ import annotations

import click
import pytest

from recall.cli.common import Finite


def _params(group: click.Command, prefix: str = ""):
    if isinstance(group, click.Group):  # lazy groups list and load their commands on demand
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            yield from _params(group.get_command(ctx, name), f"{prefix} {name}")
    for param in group.params:
        yield prefix.strip(), param


def _commands():
    from recall.cli import main
    from recall_eval.cli import main as eval_main

    return [("recall", main), ("recall-eval", eval_main)]


def test_every_number_option_has_a_range_and_floats_refuse_nan():
    loose = []
    for prog, group in _commands():
        for where, param in _params(group):
            t = param.type
            if isinstance(t, click.types.FloatParamType) and not isinstance(t, Finite):
                loose.append(f"{prog} {where} {param.name}: float without recall.cli.common.Finite")
            elif isinstance(t, click.types.IntParamType) and not isinstance(t, click.IntRange):
                loose.append(f"{prog} {where} {param.name}: int without click.IntRange")
            elif isinstance(t, click.IntRange) and (t.max is None and t.min is None):
                loose.append(f"{prog} {where} {param.name}: an IntRange without bounds")
    assert loose == []


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999"])
def test_finite_refuses_what_is_not_a_number(value):
    with pytest.raises(click.BadParameter):
        Finite(0, 100).convert(value, None, None)
    assert Finite(0, 100).convert("2.5", None, None) == 2.5
