"""A schema of every field kind of the protobuf JSON mapping, for the tests (issue 40).

`v1/kinds.proto` is compiled by scripts/generate (`*_pb2`, typed bindings); never shipped.
"""
