// Measures the largest single heap allocation a decode makes, by interposing
// malloc (msgpack-c allocates with malloc, not operator new). Its own
// executable so the interposer touches nothing else; not built under ASan,
// which owns malloc there.
#include <atomic>
#include <cstddef>
#include <string>

#include <catch2/catch.hpp>

#include "trellis/protocol/codec.h"

extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* p, size_t size);
void __libc_free(void* p);
}

namespace {

std::atomic<size_t> largest_allocation{0};

void Note(size_t size) {
  size_t seen = largest_allocation.load(std::memory_order_relaxed);
  while (size > seen && !largest_allocation.compare_exchange_weak(seen, size)) {
  }
}

}  // namespace

extern "C" {
void* malloc(size_t size) {
  Note(size);
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  Note(count * size);
  return __libc_calloc(count, size);
}
void* realloc(void* p, size_t size) {
  Note(size);
  return __libc_realloc(p, size);
}
void free(void* p) { __libc_free(p); }
}

namespace trellis::protocol {
namespace {

// The largest allocation made while decoding `body` as a message.
size_t LargestAllocationDecoding(const std::string& body, DecodeErrorKind* kind) {
  largest_allocation = 0;
  auto decoded = DecodeMessage(body);
  const size_t largest = largest_allocation;
  *kind = std::holds_alternative<DecodeError>(decoded) ? std::get<DecodeError>(decoded).kind
                                                       : DecodeErrorKind::kBadShape;
  return largest;
}

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (const int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

TEST_CASE("huge declared sizes are refused without a large allocation", "[alloc]") {
  DecodeErrorKind kind;
  CHECK(LargestAllocationDecoding(Bytes({0xdd, 0xff, 0xff, 0xff, 0xff}), &kind) < 1024);
  CHECK(kind == DecodeErrorKind::kLimitExceeded);
  CHECK(LargestAllocationDecoding(Bytes({0xdf, 0xff, 0xff, 0xff, 0xff}), &kind) < 1024);
  CHECK(kind == DecodeErrorKind::kLimitExceeded);
  CHECK(LargestAllocationDecoding(Bytes({0xdb, 0xff, 0xff, 0xff, 0xff}), &kind) < 1024);
  CHECK(kind == DecodeErrorKind::kLimitExceeded);
  // At the limit but with the elements missing: truncated, still nothing big.
  CHECK(LargestAllocationDecoding(
            Bytes({0x94, 0x00, 0x07, 0xa1, 'p', 0xdd, 0x00, 0x10, 0x00, 0x00}), &kind) < 1024);
  CHECK(kind == DecodeErrorKind::kTruncated);
  CHECK(LargestAllocationDecoding(Bytes({0xc6, 0x00, 0x80, 0x00, 0x00}), &kind) < 1024);
  CHECK(kind == DecodeErrorKind::kTruncated);
}

TEST_CASE("the allocation probe does see a real decode's memory", "[alloc]") {
  // Guards the test above against a probe that measures nothing.
  std::string body = Bytes({0xdc, 0x10, 0x00});  // array 16 of 4096 nils
  body.append(4096, '\xc0');
  largest_allocation = 0;
  auto decoded = DecodeValue(body);
  REQUIRE(std::holds_alternative<Value>(decoded));
  CHECK(largest_allocation >= 4096 * sizeof(Value));
}

}  // namespace
}  // namespace trellis::protocol
