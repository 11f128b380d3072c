"""pipeline/beam_speed.py: Beam's state-and-timer introspection asked once per
DoFn gives what Beam's own function gives, and stateful DoFns still run."""
from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.coders import VarIntCoder
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import userstate
from apache_beam.transforms.timeutil import TimeDomain

from pipeline.beam_speed import memoise_dofn_specs, memoised

TOTAL = userstate.BagStateSpec("values", VarIntCoder())
FLUSH = userstate.TimerSpec("flush", TimeDomain.WATERMARK)


class SumPerKey(beam.DoFn):
    """A stateful DoFn: a bag state and an event-time timer."""

    def process(self, item, total=beam.DoFn.StateParam(TOTAL),
                flush=beam.DoFn.TimerParam(FLUSH)):
        total.add(item[1])
        flush.set(0)

    @userstate.on_timer(FLUSH)
    def emit(self, key=beam.DoFn.KeyParam, total=beam.DoFn.StateParam(TOTAL)):
        yield key, sum(total.read())


class Plain(beam.DoFn):
    def process(self, item):
        yield item


def _original():
    f = userstate.get_dofn_specs
    return getattr(f, "_evalbeam_memoised", f)


def test_the_memo_gives_beams_answer_once_per_dofn():
    calls = []

    def counting(dofn):
        calls.append(dofn)
        return _original()(dofn)
    memo = memoised(counting)
    stateful, plain, mapped = SumPerKey(), Plain(), beam.Map(lambda x: x).fn
    for dofn in (stateful, plain, mapped):
        for _ in range(3):
            assert memo(dofn) == _original()(dofn)
    assert memo(stateful) == ({TOTAL}, {FLUSH}) and memo(plain) == (set(), set())
    assert calls == [stateful, plain, mapped]  # each asked once
    got = memo(stateful)
    got[0].clear()  # a caller's change does not reach the memo
    assert memo(stateful) == ({TOTAL}, {FLUSH}) and len(calls) == 3


def test_objects_it_cannot_remember_and_beams_errors_go_to_beam_every_time():
    calls = []

    def failing(dofn):
        calls.append(dofn)
        raise ValueError("duplicate process method parameters")
    memo = memoised(failing)
    dofn = Plain()
    for _ in range(2):
        with pytest.raises(ValueError, match="duplicate"):
            memo(dofn)
    assert len(calls) == 2

    class Slotted:
        __slots__ = ()
    answers = []
    memo = memoised(lambda d: answers.append(d) or (set(), set()))
    slotted = Slotted()
    assert memo(slotted) == memo(slotted) == (set(), set()) and len(answers) == 2


def test_installed_once_and_a_stateful_pipeline_still_runs():
    memoise_dofn_specs()
    installed = userstate.get_dofn_specs
    memoise_dofn_specs()
    assert userstate.get_dofn_specs is installed and installed._evalbeam_memoised
    with beam.Pipeline(runner="FnApiRunner") as p:
        sums = (p | beam.Create([("a", 1), ("b", 2), ("a", 3), ("b", 4), ("c", 5)])
                | beam.ParDo(SumPerKey()))
        assert_that(sums, equal_to([("a", 4), ("b", 6), ("c", 5)]))


def test_one_view_per_options_object_and_class_sharing_the_options():
    from apache_beam.options.pipeline_options import (PipelineOptions, StandardOptions,
                                                      TypeOptions)
    from pipeline.beam_speed import memoised_view_as
    made = []

    def counting(self, cls):
        made.append(cls)
        return getattr(PipelineOptions.view_as, "_evalbeam_memoised",
                       PipelineOptions.view_as)(self, cls)
    view_as = memoised_view_as(counting)
    options = PipelineOptions(["--runner=FnApiRunner", "--type_check_strictness=ALL_REQUIRED"])
    first = view_as(options, TypeOptions)
    assert view_as(options, TypeOptions) is first and made == [TypeOptions]
    assert first.type_check_strictness == "ALL_REQUIRED"
    first.pipeline_type_check = False  # written through the view: the options see it
    assert view_as(options, TypeOptions).pipeline_type_check is False
    assert options.view_as(TypeOptions).pipeline_type_check is False
    assert view_as(options, StandardOptions).runner == "FnApiRunner"
    other = PipelineOptions([])
    assert view_as(other, TypeOptions) is not first and len(made) == 3
    assert view_as(other, TypeOptions).pipeline_type_check is True


def test_installing_both_memos_is_idempotent():
    from apache_beam.options.pipeline_options import PipelineOptions
    from pipeline import beam_speed
    beam_speed.install()
    views, specs = PipelineOptions.view_as, userstate.get_dofn_specs
    beam_speed.install()
    assert PipelineOptions.view_as is views and userstate.get_dofn_specs is specs
    assert views._evalbeam_memoised and specs._evalbeam_memoised
