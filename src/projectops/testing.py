"""The pytest plugin under its package name (``-p projectops.testing``, or ``pytest_plugins``,
where plugins are not autoloaded): the ``projectops_mock`` fixture of
:mod:`_projectops_pytestplugin`, a :class:`projectops.mock.MockServer` for one test."""

from _projectops_pytestplugin import projectops_mock

__all__ = ["projectops_mock"]
