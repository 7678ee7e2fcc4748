"""The rule modules: each declares its rules beside the checks that emit them (or says where
they are emitted), and the registry collects every declaration, once.

SPEC section 4's table of codes lives outside this repository, so its codes and default
severities are written here (SPEC_CODES); where the spec is at hand (a checkout beside
`shared/`), a test reads its table and holds SPEC_CODES to it.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from collections import Counter
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

import knowl_build
from knowl_build import rules
from knowl_build.rules.registry import MODULES, RULES, RULES_BY_CODE, Rule, collect

# SPEC section 4: code -> default severity.
SPEC_CODES = {
    "KB001": "error",
    "KB002": "error",
    "KB003": "error",
    "KB004": "error",
    "KB005": "error",
    "KB006": "warning",
    "KB007": "error",
    "KB008": "warning",
    "KB009": "info",
    "KB050": "error",
    "KB101": "error",
    "KB102": "error",
    "KB103": "error",
    "KB104": "error",
    "KB105": "warning",
    "KB106": "error",
    "KB107": "warning",
    "KB201": "warning",
    "KB202": "warning",
    "KB203": "warning",
    "KB204": "warning",
    "KB205": "warning",
    "KB301": "error",
    "KB302": "error",
    "KB303": "info",
    "KB401": "error",
    "KB402": "error",
    "KB403": "error",
}

# Codes declared but emitted nowhere, each with the reason it is kept.
RESERVED: dict[str, str] = {}

SPEC = Path(__file__).resolve().parents[2] / "shared" / "SPEC.md"
PACKAGE = Path(knowl_build.__file__).parent


def declared_here(module: ModuleType) -> list[str]:
    """The names `module` binds to a `Rule(...)` at its top level, in its source (a Rule
    imported from elsewhere is not declared here)."""
    assert module.__file__ is not None
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    names = []
    for node in tree.body:
        target: ast.expr
        value: ast.expr | None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        else:
            continue
        if (
            isinstance(target, ast.Name)
            and isinstance(value, ast.Call)
            and getattr(value.func, "id", None) == "Rule"
        ):
            names.append(target.id)
    return names


def rule_modules() -> list[ModuleType]:
    """Every module of knowl_build.rules that declares a rule."""
    modules = (
        importlib.import_module(info.name)
        for info in pkgutil.iter_modules(rules.__path__, f"{rules.__name__}.")
    )
    return [module for module in modules if declared_here(module)]


def declarations() -> list[tuple[str, str, Rule]]:
    """(module, name, rule) for every rule declared in a rule module."""
    return [
        (module.__name__, name, getattr(module, name))
        for module in rule_modules()
        for name in declared_here(module)
    ]


def emitted_codes() -> Counter[str]:
    """Codes the package source emits: a code is emitted where it is the first argument of a
    call (`Finding("KB050", …)`, `finding_at(BROKEN_LINK.code, …)`, `self.report(FIELD_TYPE,
    …)`), written as a string, a declaration or a declaration's `.code`. Declarations pass
    their code by keyword, so they do not count."""
    constants = {name: rule.code for _, name, rule in declarations()}
    found: Counter[str] = Counter()
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            first = node.args[0]
            if isinstance(first, ast.Attribute) and first.attr == "code":
                first = first.value  # BROKEN_LINK.code, references.BROKEN_LINK.code
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                if re.fullmatch(r"KB\d{3}", first.value):
                    found[first.value] += 1
            elif isinstance(first, ast.Name | ast.Attribute):
                name = first.id if isinstance(first, ast.Name) else first.attr
                if name in constants:
                    found[constants[name]] += 1
    return found


def test_every_spec_code_is_declared_once_with_its_default() -> None:
    declared = Counter(rule.code for _, _, rule in declarations())
    assert {code: declared[code] for code in SPEC_CODES} == dict.fromkeys(SPEC_CODES, 1)
    assert {code: RULES_BY_CODE[code].default for code in SPEC_CODES} == SPEC_CODES


def test_every_code_is_declared_once() -> None:
    """The codes the project adds beyond the spec (KB010, KB011, KB012) too."""
    declared = Counter(rule.code for _, _, rule in declarations())
    assert [code for code, count in declared.items() if count > 1] == []


def test_every_declaration_is_in_its_module_rules_and_in_the_registry() -> None:
    modules = rule_modules()
    assert sorted(m.__name__ for m in modules) == sorted(m.__name__ for m in MODULES)
    for module in modules:
        declared = [getattr(module, name) for name in declared_here(module)]
        assert declared == list(module.RULES), module.__name__
    assert sorted((rule for _, _, rule in declarations()), key=lambda r: r.code) == list(RULES)
    assert [rule.code for rule in RULES] == sorted(RULES_BY_CODE)
    assert all(RULES_BY_CODE[rule.code] is rule for rule in RULES)


def test_every_declared_code_is_emitted_or_reserved() -> None:
    emitted = emitted_codes()
    assert [rule.code for rule in RULES if not emitted[rule.code]] == sorted(RESERVED)
    assert sorted(set(emitted) - set(RULES_BY_CODE)) == []  # nothing emitted undeclared
    assert all(reason.strip() for reason in RESERVED.values())


def test_names_are_kebab_case_and_unique() -> None:
    names = [rule.name for rule in RULES]
    assert [n for n in names if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", n)] == []
    assert [n for n, count in Counter(names).items() if count > 1] == []


def test_declarations_are_well_formed() -> None:
    for module, constant, rule in declarations():
        where = f"{module}.{constant}"
        assert re.fullmatch(r"KB\d{3}", rule.code), where
        assert rule.default in ("error", "warning", "info"), where
        assert constant == rule.name.upper().replace("-", "_"), where
        assert rule.summary and rule.doc, where
        assert rule.doc == " ".join(rule.doc.split()), where


def test_registry_refuses_a_code_declared_twice() -> None:
    first = Rule("KB999", "first", "error", "one", "One.")
    second = Rule("KB999", "second", "error", "two", "Two.")
    modules = [
        SimpleNamespace(__name__="rules.one", RULES=(first,)),
        SimpleNamespace(__name__="rules.two", RULES=(second,)),
    ]
    with pytest.raises(
        ValueError, match=r"rules\.two: rule KB999 is already declared by rules\.one"
    ):
        collect(modules)


def test_registry_sorts_by_code_whatever_the_module_order() -> None:
    late = Rule("KB900", "late", "info", "late", "Late.")
    early = Rule("KB100", "early", "info", "early", "Early.")
    modules = [SimpleNamespace(__name__="m", RULES=(late, early))]
    assert collect(modules) == (early, late)
    assert collect(reversed(MODULES)) == RULES


def test_spec_codes_match_the_spec_table() -> None:
    if not SPEC.is_file():
        pytest.skip(f"the spec is not here: {SPEC} (../shared is absent)")
    text = SPEC.read_text(encoding="utf-8")
    section = text[text.index("## 4. Rules") : text.index("## 5.")]
    table = dict(re.findall(r"^\| (KB\d{3}) \| (\w+) \|", section, re.MULTILINE))
    assert table == SPEC_CODES
