"""Naming an implementation: built-ins, module:attribute, .py files; load errors name the fix."""

import pytest
from conftest import adapter_path

from conformance.boundary.loading import load
from conformance.errors import LoadError


def test_builtin_name_loads_the_reference():
    candidate = load("reference")
    assert candidate.conventions.framework == "torch"
    assert "layer_norm" in candidate.provided_parts() and "model.train_step" in candidate.provided_parts()


def test_module_attribute_and_file_paths_load():
    assert load("conformance.implementations.numpy_impl.adapter:adapter").provides("layer_norm")
    assert load(adapter_path("only_pe")).provided_parts() == ["positional_encoding"]


def test_a_class_is_instantiated():
    candidate = load("conformance.implementations.numpy_impl.adapter:NumpyAdapter")
    assert candidate.provides("positional_encoding")


@pytest.mark.parametrize(
    ("spec", "fix"),
    [
        ("no_such_module_xyz:adapter", "Fix: install the package"),
        ("conformance.config:adapter", "has no attribute 'adapter'. Fix: define `adapter = MyAdapter()`"),
        ("nope.py", "no file 'nope.py'. Fix: check the path"),
        ("not a name", "Fix: give a built-in name"),
        (adapter_path("no_conventions"), "declares no conventions. Fix: add"),
    ],
)
def test_load_errors_name_the_fix(spec, fix):
    with pytest.raises(LoadError, match=None) as info:
        load(spec)
    assert fix in str(info.value)


def test_a_misspelt_part_is_warned_about(tmp_path):
    path = tmp_path / "typo.py"
    path.write_text(
        "from conformance import Conventions\n"
        "class A:\n    conventions = Conventions()\n"
        "    def positional_encoding(self, n, d):\n        raise NotImplementedError\n"
        "    def layer_nrom(self, x, g, b, e):\n        return x\n"
        "adapter = A()\n"
    )
    assert load(str(path)).load_warnings == [f"{path}: method 'layer_nrom' is not a part; did you mean 'layer_norm'?"]
