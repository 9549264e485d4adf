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
  bool checksum = false;
  bool set = false;
};
ZSTD_CCtx* ThreadCCtx(int level, bool checksum) {
  thread_local ThreadCompressor c;
  if (c.ctx == nullptr) return nullptr;
  if (!c.set || c.level != level || c.checksum != checksum) {
    if (ZSTD_isError(ZSTD_CCtx_setParameter(c.ctx.get(), ZSTD_c_compressionLevel, level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(c.ctx.get(), ZSTD_c_checksumFlag, checksum ? 1 : 0))) {
      c.set = false;
      return nullptr;
    }
    c.level = level;
    c.checksum = checksum;
    c.set = true;
  }
  return c.ctx.get();
}

// RFC 8878 section 3.1.1: the magic number, then the frame header
// descriptor byte.
constexpr uint32_t kZstdMagic = 0xFD2FB528;
constexpr uint8_t kChecksumFlag = 1 << 2;
constexpr uint8_t kDictionaryIdFlags = 3;
constexpr uint8_t kContentSizeFlags = 3 << 6;
constexpr uint8_t kSingleSegmentFlag = 1 << 5;
// Bit 4 is unused (decoders ignore it) and bit 3 reserved; writers leave
// both 0, so a set one is damage.
constexpr uint8_t kUnusedFlags = 3 << 3;
ZSTD_DCtx* ThreadDCtx() {
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxDeleter> ctx(ZSTD_createDCtx());
  return ctx.get();
}

}  // namespace

size_t ZstdBound(size_t n) { return ZSTD_compressBound(n); }

absl::StatusOr<size_t> ZstdCompressInto(absl::string_view src, int level, char* dst,
                                        size_t dst_capacity, bool checksum) {
  ZSTD_CCtx* ctx = ThreadCCtx(level, checksum);
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

absl::Status ZstdDecompressExact(absl::string_view frame, char* dst, size_t dst_size) {
  ZSTD_DCtx* ctx = ThreadDCtx();
  if (ctx == nullptr) return absl::ResourceExhaustedError("zstd: no decompression context");
  size_t n = ZSTD_decompressDCtx(ctx, dst, dst_size, frame.data(), frame.size());
  if (ZSTD_isError(n)) {
    return absl::DataLossError(absl::StrCat("zstd: corrupt frame: ", ZSTD_getErrorName(n)));
  }
  if (n != dst_size) {
    return absl::DataLossError(
        absl::StrCat("zstd: frame decompressed to ", n, " bytes, expected ", dst_size));
  }
  return absl::OkStatus();
}

absl::Status CheckBlockFrame(absl::string_view frame, size_t raw_size, bool require_checksum) {
  if (frame.size() < 5) {
    return absl::DataLossError(
        absl::StrCat("zstd: frame of ", frame.size(), " bytes is too short"));
  }
  const auto* p = reinterpret_cast<const unsigned char*>(frame.data());
  const uint32_t magic = p[0] | (p[1] << 8) | (p[2] << 16) | (uint32_t{p[3]} << 24);
  if (magic != kZstdMagic) {
    return absl::DataLossError("zstd: not a zstd frame (skippable frames are not allowed)");
  }
  const uint8_t descriptor = p[4];
  if ((descriptor & kUnusedFlags) != 0) {
    return absl::DataLossError("zstd: frame header sets an unused or reserved bit");
  }
  if ((descriptor & kDictionaryIdFlags) != 0) {
    return absl::DataLossError("zstd: frame names a dictionary");
  }
  // Without the single-segment flag, content size flag 0 means "not
  // declared"; with it, a 1-byte size.
  if ((descriptor & kContentSizeFlags) == 0 && (descriptor & kSingleSegmentFlag) == 0) {
    return absl::DataLossError("zstd: frame does not declare its content size");
  }
  if (require_checksum && (descriptor & kChecksumFlag) == 0) {
    return absl::DataLossError("zstd: frame has no content checksum");
  }
  const unsigned long long declared = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR || declared == ZSTD_CONTENTSIZE_UNKNOWN) {
    return absl::DataLossError("zstd: corrupt frame header");
  }
  if (declared != raw_size) {
    return absl::DataLossError(
        absl::StrCat("zstd: frame declares ", declared, " bytes, the block ", raw_size));
  }
  const size_t end = ZSTD_findFrameCompressedSize(frame.data(), frame.size());
  if (ZSTD_isError(end)) {
    return absl::DataLossError(absl::StrCat("zstd: corrupt frame: ", ZSTD_getErrorName(end)));
  }
  if (end != frame.size()) {
    return absl::DataLossError(
        absl::StrCat("zstd: ", frame.size() - end, " bytes after the frame"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ZstdDecompress(absl::string_view frame, size_t max_size) {
  // One frame and nothing else: zstd itself would skip a skippable frame
  // and decode a second frame after the first.
  if (frame.size() < 4 ||
      (static_cast<uint32_t>(static_cast<uint8_t>(frame[0])) |
       static_cast<uint32_t>(static_cast<uint8_t>(frame[1])) << 8 |
       static_cast<uint32_t>(static_cast<uint8_t>(frame[2])) << 16 |
       static_cast<uint32_t>(static_cast<uint8_t>(frame[3])) << 24) != kZstdMagic) {
    return absl::DataLossError("zstd: not a zstd frame (skippable frames are not allowed)");
  }
  unsigned long long declared = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR) {
    return absl::DataLossError("zstd: not a zstd frame");
  }
  if (declared == ZSTD_CONTENTSIZE_UNKNOWN) {
    return absl::DataLossError("zstd: frame does not declare its size");
  }
  if (declared > max_size) {
    return absl::ResourceExhaustedError(
        absl::StrCat("zstd: frame declares ", declared, " bytes, the cap is ", max_size));
  }
  const size_t end = ZSTD_findFrameCompressedSize(frame.data(), frame.size());
  if (ZSTD_isError(end)) {
    return absl::DataLossError(absl::StrCat("zstd: corrupt frame: ", ZSTD_getErrorName(end)));
  }
  if (end != frame.size()) {
    return absl::DataLossError(
        absl::StrCat("zstd: ", frame.size() - end, " bytes after the frame"));
  }
  std::string out(static_cast<size_t>(declared), '\0');
  if (absl::Status s = ZstdDecompressExact(frame, out.data(), out.size()); !s.ok()) {
    return s;
  }
  return out;
}

}  // namespace rankwire::compression
