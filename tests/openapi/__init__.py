"""Tests of the OpenAPI document (projectops.openapi) and its reference page (server.docs)."""
