// The independent reference: Hugging Face's pure-JS tokenizers (@huggingface/tokenizers) run under
// node. Usage:
//   node hf_tokenizers.mjs MODULES_DIR encode TOKENIZER_JSON TEXT_FILE [--add-special]
//       one line of space-separated ids per text line (special tokens only when asked)
//   node hf_tokenizers.mjs MODULES_DIR decode TOKENIZER_JSON IDS_FILE
//       one text line per id line, special tokens kept, no clean-up of spaces
//   node hf_tokenizers.mjs MODULES_DIR tokens TOKENIZER_JSON STRING
//       the pieces of one string as JSON (for checks on a fixture)
// MODULES_DIR is the folder npm installed @huggingface/tokenizers into.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const [modulesDir, mode, tokenizerPath, input, flag] = process.argv.slice(2);
if (!modulesDir || !["encode", "decode", "tokens"].includes(mode) || !tokenizerPath || input === undefined) {
  console.error("usage: hf_tokenizers.mjs MODULES_DIR encode|decode|tokens TOKENIZER_JSON INPUT [--add-special]");
  process.exit(2);
}
const { Tokenizer } = createRequire(path.resolve(modulesDir) + "/")("@huggingface/tokenizers");
// No tokenizer_config.json: spaces are not "cleaned up" on decode, as fivefold never does.
const tokenizer = new Tokenizer(JSON.parse(fs.readFileSync(tokenizerPath, "utf8")),
                                { clean_up_tokenization_spaces: false });

// Lines end at "\n" only: a "\r" inside a line is text.
function readLines(file) {
  const lines = fs.readFileSync(file, "utf8").split("\n");
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

const out = [];
if (mode === "encode") {
  const addSpecial = flag === "--add-special";
  for (const line of readLines(input)) {
    out.push(tokenizer.encode(line, { add_special_tokens: addSpecial }).ids.join(" "));
  }
} else if (mode === "decode") {
  for (const line of readLines(input)) {
    const ids = line.trim() === "" ? [] : line.trim().split(/ +/).map(Number);
    // decode() refuses an empty list; an empty line decodes to an empty line.
    out.push(ids.length === 0 ? "" : tokenizer.decode(ids, { skip_special_tokens: false }));
  }
} else {
  out.push(JSON.stringify(tokenizer.tokenize(input)));
}
// Writes to a file or pipe are synchronous in node on Linux: nothing is lost at exit.
process.stdout.write(out.map((l) => l + "\n").join(""));
