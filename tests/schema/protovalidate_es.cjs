// Validate a batch of messages with protovalidate-es, the engine of another language, as
// tests/schema/test_required_in_protovalidate_es.py asks (docs/contract.md §4.1, §4.2):
//
//   NODE_PATH=tests/mcp/node/node_modules node protovalidate_es.cjs CASES.json VERDICTS.json
//
// CASES.json: {"descriptors": a FileDescriptorSet in base64, "cases": [{"type": a message's
// full name, "json": the message in the protobuf JSON mapping}, ...]}. VERDICTS.json gets one
// verdict per case, in order: {"kind": "valid" | "invalid" | "error", "error": text or null,
// "violations": [{"path": [{"field": a JSON name} | {"index": n} | {"key": text}, ...],
// "rule": the rule's id, "message": its text}, ...]}. The descriptors are built at run time
// from the set (no code generation), as any engine given the schema would see it.
"use strict";

const fs = require("node:fs");
const {
  createFileRegistry,
  fromBinary,
  fromJson,
} = require("@bufbuild/protobuf");
const { FileDescriptorSetSchema } = require("@bufbuild/protobuf/wkt");
const { createValidator } = require("@bufbuild/protovalidate");

// A violation's path, as data: the caller writes it as docs/contract.md §4.4 says.
function pathOf(path) {
  return path.map((element) => {
    switch (element.kind) {
      case "field":
        return { field: element.jsonName };
      case "list_sub":
        return { index: element.index };
      case "map_sub":
        return { key: String(element.key) };
      default: // a oneof or an extension: no JSON name of a field
        return { other: element.kind };
    }
  });
}

function main() {
  const [input, output] = process.argv.slice(2);
  const request = JSON.parse(fs.readFileSync(input, "utf8"));
  const set = fromBinary(
    FileDescriptorSetSchema,
    Buffer.from(request.descriptors, "base64"),
  );
  const registry = createFileRegistry(set);
  const validator = createValidator();
  const verdicts = request.cases.map((c) => {
    const schema = registry.getMessage(c.type);
    if (schema === undefined) {
      return { kind: "error", error: `no message ${c.type}`, violations: [] };
    }
    const result = validator.validate(schema, fromJson(schema, c.json, { registry }));
    return {
      kind: result.kind,
      error: result.kind === "error" ? String(result.error) : null,
      violations: (result.violations ?? []).map((v) => ({
        path: pathOf(v.field),
        rule: v.ruleId,
        message: v.message,
      })),
    };
  });
  fs.writeFileSync(output, JSON.stringify(verdicts));
}

main();
