"""The pytest plugin under the package's name (``-p projectops.testing``, where plugins are
not autoloaded): the ``projectops_mock`` fixture, a :class:`projectops.mock.MockServer`."""

from _projectops_pytestplugin import projectops_mock

__all__ = ["projectops_mock"]
