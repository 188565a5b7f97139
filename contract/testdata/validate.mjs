// Validates an OpenAPI document with @apidevtools/swagger-parser (an independent
// validator: JSON Schema of the OpenAPI version, plus its own semantic checks).
// Usage: node validate.mjs NODE_MODULES_DIR FILE
import { createRequire } from "node:module";
import path from "node:path";
const require = createRequire(path.join(process.argv[2], "noop.js"));
const SwaggerParser = require("@apidevtools/swagger-parser");
try {
  const api = await SwaggerParser.validate(process.argv[3]);
  console.log(`valid: OpenAPI ${api.openapi}, ${Object.keys(api.paths).length} paths`);
} catch (e) {
  console.error(String(e.message || e));
  process.exit(1);
}
