"""Generated protobuf bindings of the `projectops.v1` proto package.

Made by scripts/generate from proto/projectops/v1/*.proto; never edit these files by hand.
"""
