"""JAX's explanations of tracing cache misses read into data: the texts below are JAX 0.10's,
as its ``jax_explain_cache_misses`` option logs them (captured from real calls; the long
lines are JAX's, joined from pieces here)."""

from __future__ import annotations

from pytest_membudget.probes.jax.explain import parse, strongest
from pytest_membudget.vocabulary import Recompile

NEW_SHAPE = """TRACING CACHE MISS at /tmp/jx2.py:8 (<module>):
  for f defined at /tmp/jx2.py:5
  all previously seen cache keys differ. For the closest previous key:
  different input types:
  * at x, now f32[4] and before f32[3]"""
WEAK_TYPE = """TRACING CACHE MISS at /tmp/jx2.py:9 (<module>):
  for f defined at /tmp/jx2.py:5
  all previously seen cache keys differ. For the closest previous key:
  different input types:
  * at y, now f32[]{weak_type=False} and before f32[]{weak_type=True}\
https://docs.jax.dev/en/latest/type_promotion.html#weak-types"""
STATIC = """TRACING CACHE MISS at /tmp/jx2.py:12:19 (<module>):
  for g defined at /tmp/jx2.py:10
  all previously seen cache keys differ. For the closest previous key:
  different input pytree:
  * at input path [0][1], now <class 'jax._src.tree_util.Static'> with pytree metadata \
Static(val=3) and before <class 'jax._src.tree_util.Static'> with pytree metadata \
Static(val=2), so the pytree node metadata does not match"""
NEVER_SEEN = """TRACING CACHE MISS at /tmp/jx2.py:7 (<module>):
  never seen function:
    f id=140692565364864 defined at /tmp/jx2.py:5"""
REDEFINED = """TRACING CACHE MISS at /tmp/loop.py:4 (step):
  never seen function:
    <lambda> id=140692565364999 defined at /tmp/loop.py:4
  but seen another function defined on the same line; maybe the function is
  being re-defined repeatedly, preventing caching?"""
DTYPE = """TRACING CACHE MISS at /tmp/t.py:9 (<module>):
  for f defined at /tmp/t.py:5
  all previously seen cache keys differ. For the closest previous key:
  different input types:
  * at batch['obs'], now i32[4,8] and before f32[4,8]"""


def test_a_new_shape_names_the_argument_and_both_shapes() -> None:
    found = parse(NEW_SHAPE)
    assert found is not None
    assert (found["function"], found["kind"]) == ("f", Recompile.SHAPE.value)
    assert (found["call_file"], found["call_line"]) == ("/tmp/jx2.py", 8)
    assert (found["defined_file"], found["defined_line"]) == ("/tmp/jx2.py", 5)
    assert found["changes"] == [{"arg": "x", "now": "f32[4]", "before": "f32[3]",
                                 "kind": Recompile.SHAPE.value}]


def test_a_weak_type_change_is_told_from_a_shape_change() -> None:
    found = parse(WEAK_TYPE)
    assert found is not None and found["kind"] == Recompile.WEAK_TYPE.value
    assert found["changes"][0]["before"] == "f32[]{weak_type=True}"


def test_a_static_argument_gives_its_values() -> None:
    found = parse(STATIC)
    assert found is not None and found["kind"] == Recompile.STATIC.value
    assert found["changes"][0][("now")] == "3" and found["changes"][0]["before"] == "2"
    assert found["call_line"] == 12


def test_a_function_made_again_on_the_same_line_is_redefined() -> None:
    assert parse(NEVER_SEEN)["kind"] == Recompile.NEW_FUNCTION.value  # type: ignore[index]
    found = parse(REDEFINED)
    assert found is not None
    assert (found["function"], found["kind"]) == ("<lambda>", Recompile.REDEFINED.value)


def test_a_dtype_change_of_a_pytree_leaf() -> None:
    found = parse(DTYPE)
    assert found is not None and found["kind"] == Recompile.DTYPE.value
    assert found["changes"][0]["arg"] == "batch['obs']"


def test_other_texts_are_not_explanations() -> None:
    assert parse("PERSISTENT COMPILATION CACHE MISS for 'jit_f' with key 'x'") is None
    assert parse("") is None


def test_the_strongest_change_leads() -> None:
    assert strongest(Recompile.SHAPE.value, Recompile.STATIC.value) == Recompile.STATIC.value
    assert strongest(Recompile.OTHER.value, Recompile.WEAK_TYPE.value) == (
        Recompile.WEAK_TYPE.value)
