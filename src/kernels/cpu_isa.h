#pragma once
// Which hardware runs a 16-bit GEMM here, found at run time (cpuid and oneDNN's dispatcher), never
// assumed from the build: the same binary may meet AMX, AVX512-BF16 or neither.
#include <string>

namespace ff {

enum class Bf16Path { amx, avx512_bf16, emulated };

Bf16Path bf16_path();
const char* bf16_path_name(Bf16Path p);  // "AMX", "AVX512-BF16", "emulated"
// One start-up line: the path, and where emulated, that bf16 will be slower than fp32 and why.
std::string bf16_path_description();
// The same for f16 (oneDNN native, or widened to fp32: exact products at fp32 speed).
std::string f16_path_description();

}  // namespace ff
