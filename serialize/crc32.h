// CRC-32 (the zip/zlib polynomial, 0xEDB88320 reflected) fast enough to stay off a save's
// critical path: zlib 1.2.13's table CRC runs at about 0.9 GiB/s here, slower than writing.
//
//   uint32_t c = serialize::crc32(0, data, n);   // the same value as zlib's crc32(0, data, n)
//   c = serialize::crc32(c, more, m);            // continues, as zlib's
//
// Note [Carry-less CRC-32]
// On a CPU with PCLMULQDQ and SSE4.1 (checked at run time), 64-byte blocks are folded with
// carry-less multiplications, four 128-bit lanes at a time, then reduced to 32 bits by Barrett
// reduction: the method of Intel's "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ
// Instruction" (Gopal et al., 2009), with the constants x^k mod P for the reflected polynomial.
// Inputs shorter than 64 bytes, the last len % 16 bytes, and CPUs without the instructions go
// to zlib. crc32_test checks it bit for bit against zlib on random data of every length class.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mutagrad {
namespace serialize {

uint32_t crc32(uint32_t crc, const void* data, size_t n);

// Whether crc32 uses the carry-less path on this CPU (for tests and benchmarks to report).
bool crc32_is_accelerated();

}  // namespace serialize
}  // namespace mutagrad
