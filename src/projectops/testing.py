"""The pytest plugin under the package's name (``-p projectops.testing``, where plugins are
not autoloaded): the ``projectops_mock`` fixture, a :class:`projectops.mock.MockServer`, and
``create_app``'s check of its responses turned on for the session."""

from _projectops_pytestplugin import projectops_mock, pytest_configure

__all__ = ["projectops_mock", "pytest_configure"]
