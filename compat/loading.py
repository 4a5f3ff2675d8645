"""Load GradientSpecs named on the command line: catalogue names, `file.py:NAME` or `package.module:NAME`."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import sys
import traceback
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from compat.catalogue import ALL_SPECS, FORMS, FORMS_GROUP
from compat.errors import Error
from compat.exceptions import describe_exception
from compat.probe import user_exception
from compat.spec import GradientSpec


class SpecLoadError(Error, ValueError):
    """A spec reference could not be loaded; the message names it and says what to do."""

    def __init__(self, reference: str | None, detail: str) -> None:
        self.reference, self.detail = reference, detail
        super().__init__(self.naming("spec"))

    def naming(self, where: str) -> str:
        """The message with the reference introduced by `where` (a command line says `--specs`)."""
        return self.detail if self.reference is None else f"{where} {self.reference!r}: {self.detail}"

    def __reduce__(self) -> tuple[type[SpecLoadError], tuple[str | None, str]]:
        return SpecLoadError, (self.reference, self.detail)  # it crosses process boundaries (compat.workers)


def load_specs(references: Iterable[str]) -> list[GradientSpec]:
    """Resolve each reference, in order; duplicates (by spec name) are rejected."""
    specs: list[GradientSpec] = []
    for reference in references:
        specs += load_spec(reference)
    names = [spec.name for spec in specs]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise SpecLoadError(None, f"several specs are named {duplicates}; spec names must be unique in one run")
    return specs


def load_spec(reference: str) -> list[GradientSpec]:
    """One reference: a catalogue name, `path/to/file.py[:NAME]` or `package.module:NAME`.

    NAME may be a GradientSpec, a list or tuple of them, or a function of no arguments returning either.
    Without `:NAME`, a file contributes every module-level GradientSpec it defines.
    """
    reference = reference.strip()
    return [spec if spec.source else dataclasses.replace(spec, source=reference) for spec in _load(reference)]


def _load(reference: str) -> list[GradientSpec]:
    if reference in ALL_SPECS:
        return [ALL_SPECS[reference]()]
    if reference == FORMS_GROUP:
        return [factory() for factory in FORMS.values()]
    location, _, name = reference.rpartition(":") if ":" in reference else (reference, "", "")
    if location.endswith(".py") or "/" in location:
        module = _import_file(reference, Path(location))
    elif location and all(part.isidentifier() for part in location.split(".")) and name:
        module = _import_module(reference, location)
    else:
        raise SpecLoadError(
            reference, f"not a catalogue spec, a file `path/to/file.py:NAME` or a module "
            f"`package.module:NAME`; catalogue specs: {', '.join(ALL_SPECS)} (`{FORMS_GROUP}`: the last four)"
        )
    if not name:
        found = [value for value in vars(module).values() if isinstance(value, GradientSpec)]
        if not found:
            raise SpecLoadError(reference, f"the file defines no module-level GradientSpec; "
                                f"define one, or name a factory with {location}:NAME")
        return found
    if not hasattr(module, name):
        available = sorted(key for key, value in vars(module).items() if _looks_like_specs(value))
        raise SpecLoadError(reference, f"{location} has no attribute {name!r}"
                            + (f"; GradientSpecs there: {available}" if available else ""))
    return _as_specs(reference, getattr(module, name))


def _import_file(reference: str, path: Path) -> Any:
    if not path.is_file():
        raise SpecLoadError(reference, f"file {str(path)!r} does not exist")
    module_name = f"_gradcompat_user_{abs(hash(str(path.resolve())))}"
    if module_name in sys.modules:  # several NAMEs from one file: import it once, as Python would
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise SpecLoadError(reference, f"{str(path)!r} cannot be imported as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        del sys.modules[module_name]
        if not user_exception(exc):
            raise
        raise SpecLoadError(reference, f"importing {str(path)!r} failed: {_where(exc, path)}") from exc
    return module


def _import_module(reference: str, module_name: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except BaseException as exc:
        if not user_exception(exc):
            raise
        raise SpecLoadError(reference, f"importing module {module_name!r} failed: "
                            f"{describe_exception(exc)}") from exc


def _where(exc: BaseException, path: Path) -> str:
    """The exception and the line of the spec file it came from, said once."""
    if isinstance(exc, SyntaxError):
        return f"{type(exc).__name__}: {exc.msg} (line {exc.lineno})"
    resolved = path.resolve()
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__) if Path(frame.filename).resolve() == resolved]
    line = f" (line {frames[-1].lineno})" if frames else ""
    return f"{describe_exception(exc)}{line}"


def _looks_like_specs(value: Any) -> bool:
    return isinstance(value, GradientSpec) or (
        isinstance(value, (list, tuple)) and bool(value) and all(isinstance(v, GradientSpec) for v in value))


def _as_specs(reference: str, value: Any) -> list[GradientSpec]:
    if callable(value) and not isinstance(value, GradientSpec):
        try:
            value = value()
        except BaseException as exc:
            if not user_exception(exc):
                raise
            raise SpecLoadError(reference, f"calling it raised {describe_exception(exc)}") from exc
    if isinstance(value, GradientSpec):
        return [value]
    if _looks_like_specs(value):
        return list(value)
    raise SpecLoadError(reference, f"is a {type(value).__name__}, not a compat.GradientSpec, a list "
                        f"of them, or a function returning either")
