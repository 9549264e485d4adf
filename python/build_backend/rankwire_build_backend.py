"""The package's PEP 517 build backend: setuptools' own, run on a copy of
the package's source, so that `pip install ./python` leaves the checkout as
it was. setuptools writes build/ and src/rankwire.egg-info into the tree it
builds in, and pip (since 21.3) builds a local directory in place.

Editable installs (`pip install -e`) point into the source on purpose, so
they are built in place, as setuptools builds them. Offline: nothing here
needs more than setuptools and wheel (pyproject.toml's requires).
"""

import contextlib
import os
import shutil
import tempfile

from setuptools import build_meta as _setuptools

# What is not source: never copied (a stale build/ would end up in a wheel).
_NOT_SOURCE = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", ".venv",
                                     "*.pyc")


@contextlib.contextmanager
def _on_a_copy():
    """Runs the body in a temporary copy of the working directory (the
    package root pip runs the backend in), and comes back."""
    source = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="rankwire-build-") as tmp:
        copy = os.path.join(tmp, "python")
        shutil.copytree(source, copy, ignore=_NOT_SOURCE)
        os.chdir(copy)
        try:
            yield
        finally:
            os.chdir(source)


def _abs(path):
    return None if path is None else os.path.abspath(path)


def get_requires_for_build_wheel(config_settings=None):
    with _on_a_copy():
        return _setuptools.get_requires_for_build_wheel(config_settings)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    metadata_directory = _abs(metadata_directory)
    with _on_a_copy():
        return _setuptools.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    wheel_directory, metadata_directory = _abs(wheel_directory), _abs(metadata_directory)
    with _on_a_copy():
        return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


def get_requires_for_build_sdist(config_settings=None):
    with _on_a_copy():
        return _setuptools.get_requires_for_build_sdist(config_settings)


def build_sdist(sdist_directory, config_settings=None):
    sdist_directory = _abs(sdist_directory)
    with _on_a_copy():
        return _setuptools.build_sdist(sdist_directory, config_settings)


# Editable installs: in place, as setuptools does them.
get_requires_for_build_editable = getattr(_setuptools, "get_requires_for_build_editable", None)
prepare_metadata_for_build_editable = getattr(_setuptools, "prepare_metadata_for_build_editable",
                                              None)
build_editable = getattr(_setuptools, "build_editable", None)
