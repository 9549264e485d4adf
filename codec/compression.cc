#include "codec/compression.h"

#include <zstd.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace rankwire::compression {
namespace {

struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

// Creating a context allocates several hundred KB; reuse one per thread,
// with its level as a sticky parameter so that compressing many small
// values (log lines) does not re-derive parameters on every call.
struct ThreadCompressor {
  std::unique_ptr<ZSTD_CCtx, CCtxDeleter> ctx{ZSTD_createCCtx()};
  int level = 0;
  bool level_set = false;
};
ZSTD_CCtx* ThreadCCtx(int level) {
  thread_local ThreadCompressor c;
  if (c.ctx == nullptr) return nullptr;
  if (!c.level_set || c.level != level) {
    if (ZSTD_isError(ZSTD_CCtx_setParameter(c.ctx.get(), ZSTD_c_compressionLevel, level))) {
      return nullptr;
    }
    c.level = level;
    c.level_set = true;
  }
  return c.ctx.get();
}
ZSTD_DCtx* ThreadDCtx() {
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxDeleter> ctx(ZSTD_createDCtx());
  return ctx.get();
}

}  // namespace

size_t ZstdBound(size_t n) { return ZSTD_compressBound(n); }

absl::StatusOr<size_t> ZstdCompressInto(absl::string_view src, int level,
                                        char* dst, size_t dst_capacity) {
  ZSTD_CCtx* ctx = ThreadCCtx(level);
  if (ctx == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("zstd: no compression context for level ", level));
  }
  size_t n = ZSTD_compress2(ctx, dst, dst_capacity, src.data(), src.size());
  if (ZSTD_isError(n)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("zstd: compress failed: ", ZSTD_getErrorName(n)));
  }
  return n;
}

absl::StatusOr<std::string> ZstdCompress(absl::string_view src, int level) {
  std::string out(ZstdBound(src.size()), '\0');
  ASSIGN_OR_RETURN(size_t n, ZstdCompressInto(src, level, out.data(), out.size()));
  out.resize(n);
  return out;
}

absl::Status ZstdDecompressExact(absl::string_view frame, char* dst,
                                 size_t dst_size) {
  ZSTD_DCtx* ctx = ThreadDCtx();
  if (ctx == nullptr) return absl::ResourceExhaustedError("zstd: no decompression context");
  size_t n = ZSTD_decompressDCtx(ctx, dst, dst_size, frame.data(), frame.size());
  if (ZSTD_isError(n)) {
    return absl::DataLossError(
        absl::StrCat("zstd: corrupt frame: ", ZSTD_getErrorName(n)));
  }
  if (n != dst_size) {
    return absl::DataLossError(absl::StrCat("zstd: frame decompressed to ", n,
                                            " bytes, expected ", dst_size));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ZstdDecompress(absl::string_view frame,
                                           size_t max_size) {
  unsigned long long declared = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR) {
    return absl::DataLossError("zstd: not a zstd frame");
  }
  if (declared == ZSTD_CONTENTSIZE_UNKNOWN) {
    return absl::DataLossError("zstd: frame does not declare its size");
  }
  if (declared > max_size) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "zstd: frame declares ", declared, " bytes, the cap is ", max_size));
  }
  std::string out(static_cast<size_t>(declared), '\0');
  if (absl::Status s = ZstdDecompressExact(frame, out.data(), out.size()); !s.ok()) {
    return s;
  }
  return out;
}

}  // namespace rankwire::compression
