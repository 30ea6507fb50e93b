"""The multilingual / emoji / whitespace-edge test text, one test case per line.

Written with escapes so every byte is exact whatever an editor does to the file. Two characters
are left out on purpose: U+0085 and U+FEFF, where JavaScript's \\s and Unicode's White_Space (the
Rust tokenizers' \\s) disagree, so the JS oracle would not stand for Hugging Face there. A "\\r"
appears only inside a line, never at its end, where a reader may take it for a CRLF ending.
"""

LINES = [
    "The LORD's word: they'll go, He'S here, I'M sure, we'VE seen, you'D know, it'LL be 'll 's 're 't",
    "don't can't won't I'm you're we've she'd o'clock rock'n'roll",
    "\u592a\u521d\u6709\u9053\uff0c\u9053\u4e0e\u795e\u540c\u5728\uff0c\u9053\u5c31\u662f\u795e\u3002",
    "\u306f\u3058\u3081\u306b\u795e\u306f\u5929\u3068\u5730\u3068\u3092\u5275\u9020\u3055\u308c\u305f\u3002 \u30ab\u30bf\u30ab\u30ca",
    "\ud0dc\ucd08\uc5d0 \ud558\ub098\ub2d8\uc774 \ucc9c\uc9c0\ub97c \ucc3d\uc870\ud558\uc2dc\ub2c8\ub77c",
    "\u0641\u0650\u064a \u0627\u0644\u0652\u0628\u064e\u062f\u0652\u0621\u0650 \u062e\u064e\u0644\u064e\u0642\u064e "
    "\u0627\u0644\u0644\u0647\u064f \u0627\u0644\u0633\u0651\u064e\u0645\u064e\u0627\u0648\u064e\u0627\u062a\u0650",
    "\u05d1\u05b0\u05bc\u05e8\u05b5\u05d0\u05e9\u05b4\u05c1\u05d9\u05ea \u05d1\u05b8\u05bc\u05e8\u05b8\u05d0",
    "combining: e\u0301 a\u0308 n\u0303o Z\u0351\u0352\u0353algo \u0915\u094d\u0937 \u0e01\u0e33",
    "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac \u0420\u0443\u0441\u0441\u043a\u0438\u0439 "
    "\u0939\u093f\u0928\u094d\u0926\u0940 \u0e44\u0e17\u0e22 \u10e5\u10d0\u10e0\u10d7\u10e3\u10da\u10d8",
    "family \U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 rainbow \U0001f3f3\ufe0f\u200d\U0001f308 "
    "thumbs \U0001f44d\U0001f3fd flag \U0001f1e9\U0001f1ea heart \u2764\ufe0f smile \u263a\ufe0e",
    "\U0001f600\U0001f601\U0001f602\U0001f923 \U0001f9d1\u200d\U0001f4bb\U0001f9d1\u200d\U0001f680 \U00010348 \U0001d11e",
    "\tindented\twith\ttabs\t\tand two",
    "a  b   c    d          e",
    "trailing spaces   ",
    "   leading spaces",
    " ",
    "        ",
    "\t",
    "",
    "carriage\rreturn in the middle, two\r\rof them, and x \r y",
    "digits 1234567 and 12 and 3.14159 and 1,000,000 and 0000000000000000000001 and 42nd",
    "other digits \u0663\u0664\u0665 \uff15\uff16 \u096a\u096b \u00bd \u2167",
    "special <|begin_of_text|> inside <|end_of_text|>and<think>glued</think> <s> and </s> <unk> end",
    "<|begin_of_text|><|begin_of_text|><think><|end_of_text|>",
    "<|begin_of_text",
    "<|im_start|>user hello<|im_end|><|endoftext|> <|im_start|>",
    "not NFC: e\u0301 A\u030a \u212b \u2126 \u1100\u1161\u11a8 \u0958 \u1e9b\u0323 q\u0307\u0323",
    "punctuation !!!??? ... --- (parens) [brackets] {braces} \"quotes\" \u00abguillemets\u00bb \u201ccurly\u201d",
    "unicode spaces\u00a0nbsp\u3000ideographic\u2009thin\u2002en\u200bzero-width",
    "Supercalifragilisticexpialidocious Mahershalalhashbaz JONATHELEMRECHOKIM",
    "mixed\U0001f600emoji\u4e2d\u6587text123\u0627\u0644\u0639\u0631\u0628\u064a\u0629",
    "\u00e9t\u00e9 na\u00efve caf\u00e9 \u00c5ngstr\u00f6m \u0130stanbul stra\u00dfe \ufb01nance",
]


def write(path):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for line in LINES:
            assert "\n" not in line and not line.endswith("\r"), line
            f.write(line + "\n")
