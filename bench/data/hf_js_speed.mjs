// Times @huggingface/tokenizers (node, one thread) encoding every line of a text file, without
// special tokens: prints {"tokens": N, "seconds": S} for the encode loop alone (loading excluded).
//   node hf_js_speed.mjs MODULES_DIR TOKENIZER_JSON TEXT_FILE
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const [modulesDir, tokenizerPath, textPath] = process.argv.slice(2);
const { Tokenizer } = createRequire(path.resolve(modulesDir) + "/")("@huggingface/tokenizers");
const tokenizer = new Tokenizer(JSON.parse(fs.readFileSync(tokenizerPath, "utf8")), {});
const lines = fs.readFileSync(textPath, "utf8").split("\n");
if (lines[lines.length - 1] === "") lines.pop();
const t0 = process.hrtime.bigint();
let tokens = 0;
for (const line of lines) tokens += tokenizer.encode(line, { add_special_tokens: false }).ids.length;
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
console.log(JSON.stringify({ tokens, seconds }));
