"""Beam's construction-time introspection, asked once instead of hundreds of times.

Two of Beam's per-transform questions are memoised here: the state and timer
specs of a DoFn, and the views of a pipeline's options.

Beam looks for state and timer declarations (`userstate.get_dofn_specs`) each
time it validates a ParDo, asks whether it is stateful, translates it for the
runner and sets up its bundle processor: 340 calls for the ~45 DoFns of a
default evalbeam run, each wrapping every method of the DoFn (~30, most of
them DoFn's own) and reading its signature. That cost 0.15–0.21 s of a 3.1 s
30-row run (measured with a timing wrapper, no profiler; BENCHMARKS.md §13).

The answer depends only on the DoFn object (its methods' default arguments
hold the specs), so it is remembered per object, weakly (a DoFn that goes away
takes its entry with it), and handed out as fresh sets. An object that cannot
be weakly referenced, and any call that raises (Beam's own validation
errors), go to Beam every time, as before.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable

_MEMO = "_evalbeam_memoised"


def memoised(original: Callable[[Any], tuple[set, set]]) -> Callable[[Any], tuple[set, set]]:
    """get_dofn_specs, asked once per DoFn object."""
    seen: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def get_dofn_specs(dofn: Any) -> tuple[set, set]:
        try:
            specs = seen.get(dofn)
        except TypeError:  # not weakly referenceable (or unhashable): ask Beam
            return original(dofn)
        if specs is None:
            specs = original(dofn)
            seen[dofn] = specs
        return set(specs[0]), set(specs[1])

    setattr(get_dofn_specs, _MEMO, original)
    get_dofn_specs.__doc__ = original.__doc__
    return get_dofn_specs


def memoise_dofn_specs() -> None:
    """Install the memo in Beam's userstate module (once per process): Beam's
    ParDo reads it there, as do is_stateful_dofn and validate_stateful_dofn."""
    from apache_beam.transforms import userstate
    if not hasattr(userstate.get_dofn_specs, _MEMO):
        userstate.get_dofn_specs = memoised(userstate.get_dofn_specs)


# Options views. `PipelineOptions.view_as(cls)` builds an argparse parser for
# cls's flags and parses the command line again, ~0.5 ms, and Beam asks for
# `TypeOptions` on every apply and type check: 414 views (354 of them
# TypeOptions) cost 0.20 s of a 3.1 s 30-row run. A view is a window on its
# source's option dict (`_all_options`, shared; values are read and written
# there), so the view made first serves every later request for the same
# class on the same object, as long as it still shares that dict.


def memoised_view_as(original: Callable[[Any, type], Any]) -> Callable[[Any, type], Any]:
    """PipelineOptions.view_as, one view per (options object, class)."""
    views: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def view_as(self: Any, cls: type) -> Any:
        try:
            mine = views.setdefault(self, {})
        except TypeError:
            return original(self, cls)
        view = mine.get(cls)
        if view is None or view._all_options is not self._all_options:
            view = mine[cls] = original(self, cls)
        return view

    setattr(view_as, _MEMO, original)
    view_as.__doc__ = original.__doc__
    return view_as


def memoise_option_views() -> None:
    """Install the view memo on PipelineOptions (once per process)."""
    from apache_beam.options.pipeline_options import PipelineOptions
    if not hasattr(PipelineOptions.view_as, _MEMO):
        PipelineOptions.view_as = memoised_view_as(PipelineOptions.view_as)


def install() -> None:
    """Both memos; build_pipeline calls it before it builds the graph."""
    memoise_dofn_specs()
    memoise_option_views()
