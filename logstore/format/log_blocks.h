// Log blocks (layout version 2): a request's log lines stored as their
// typed values, a block of items per hash field, rendered back to the exact
// text on read. Servers before columns (log_columns.h, layout version 3)
// wrote them; this is their reader, kept so that a store written during a
// rolling upgrade stays readable. Nothing writes blocks any more.
//
// Every line of a request is the same literal text (its header, labels)
// with the item's values in between, so the store keeps (docs/LOGS.md
// specifies the bytes):
//
//   - field ""   the LAYOUT ('L', version 2): the literal pieces, the kind
//                of each value slot between them, a table of strings that
//                string slots refer to, and how the items are split into
//                blocks: the first block holds the request's top_n items
//                (what a caller shows, so fetching them reads one block),
//                every later block `block_items`;
//   - field "#k" BLOCK k ('B'): its items' values, column by column in
//                slot order: ids (a common prefix, then each suffix), ints
//                (zigzag varints), strings (indexes into the table) and
//                numbers (binary32, each column in the cheapest of a few
//                forms: raw, a shared top byte, two top bytes, whole
//                numbers or short decimals as varints, a constant).
//
// Rendering is piece[0] value[0] piece[1] ... value[n-1] piece[n]; a
// number renders as absl::SixDigits of its binary32 value (printf's %g), a
// position slot as the item's 1-based position.
//
// Reading: BlockLayout::Parse, then a BlockReader per block. (Serialize
// writes a layout, for tests that build blocks by hand.)
//
// Thread safety: plain values; a writer or reader is used by one thread.
#ifndef RANKWIRE_LOGSTORE_FORMAT_LOG_BLOCKS_H_
#define RANKWIRE_LOGSTORE_FORMAT_LOG_BLOCKS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "codec/coding.h"

namespace rankwire::logstore {

// The hash field that holds a request's layout (every version). Item ids
// are never empty (the request validator refuses them), so it cannot
// collide with an item of a per-item format.
inline constexpr absl::string_view kLayoutField = "";

inline constexpr char kBlocksLayoutTag = 'L';
inline constexpr uint8_t kBlocksLayoutVersion = 2;
inline constexpr char kBlockTag = 'B';

// What a value slot holds.
enum class LogSlot : uint8_t {
  kItemId = 1,    // The item's id.
  kInt = 2,       // A signed integer.
  kString = 3,    // An entry of the layout's string table.
  kNumber = 4,    // A binary32 number, rendered with six significant digits.
  kPosition = 5,  // The item's 1-based position: no bytes in the block.
  // Layout version 3 only (log_columns.h): the item's 1-based place in the
  // request (the order the candidates came in); no bytes.
  kRequestIndex = 6,
};

// How a block stores one number column.
enum class NumberForm : uint8_t {
  kRaw = 0,       // count x 4 bytes, little-endian binary32.
  kTopByte = 1,   // the shared top byte, then count x the low 3 bytes.
  kWhole = 2,     // count x zigzag varint: whole numbers below 2^24.
  kConstant = 3,  // one binary32 for every item.
  kTwoTops = 4,   // two top bytes (the smaller first), a bit per item
                  // choosing one, then count x the low 3 bytes.
  kDecimal = 5,   // a scale k (1..kMaxDecimalScale), then count x zigzag
                  // varint d: the binary32 of the binary64 product d * 10^-k
                  // (10^-k the binary64 nearest to it).
};

// The largest scale of a kDecimal column, and the magnitude its digits d
// stay below.
inline constexpr int kMaxDecimalScale = 6;
inline constexpr int64_t kDecimalDigitsLimit = int64_t{1} << 31;

// Limits a reader enforces, so a corrupt or hostile value cannot ask for
// unbounded work or memory.
inline constexpr size_t kMaxLogSlots = 4096;
inline constexpr size_t kMaxLogStrings = 4096;
inline constexpr size_t kMaxLogLineBytes = size_t{1} << 20;
inline constexpr uint32_t kMaxLogItems = 1u << 20;

// One item's text from a layout's pieces (layout.pieces: one before each of
// layout.kinds' slots and one after the last) and `append_slot(s, &out)`,
// which appends slot s's value. ResourceExhausted "<what>: a rendered line
// exceeds 1 MiB" once the text passes kMaxLogLineBytes. Layouts 2 and 3
// render through it.
template <typename Layout, typename AppendSlot>
absl::StatusOr<std::string> RenderLogLine(const Layout& layout, absl::string_view what,
                                          AppendSlot&& append_slot) {
  std::string out;
  for (size_t s = 0; s < layout.kinds.size(); ++s) {
    out.append(layout.pieces[s].data(), layout.pieces[s].size());
    append_slot(s, &out);
    if (out.size() > kMaxLogLineBytes) {
      return absl::ResourceExhaustedError(std::string(what) + ": a rendered line exceeds 1 MiB");
    }
  }
  out.append(layout.pieces.back().data(), layout.pieces.back().size());
  return out;
}

// The hash field of block `b`: "#b".
std::string LogBlockField(size_t b);

// Reads a layout's slots and string table (what log_writing.h's
// AppendLogSlots writes; layout versions 2 and 3) after the slot count
// `slots` its header gave: kinds 1..`last_kind`, at most kMaxLogSlots
// slots and kMaxLogStrings strings. DataLoss "<layout>: ..." for what the
// writer never writes; the reader's own error for bytes missing.
absl::Status ReadLogSlots(coding::Reader& r, uint64_t slots, LogSlot last_kind,
                          absl::string_view layout, std::vector<std::string>* pieces,
                          std::vector<LogSlot>* kinds, std::vector<std::string>* strings);

struct BlockLayout {
  std::vector<std::string> pieces;  // kinds.size() + 1 of them.
  std::vector<LogSlot> kinds;
  std::vector<std::string> strings;
  uint32_t items = 0;
  uint32_t top_items = 0;    // Items in block 0 (at least 1 when items > 0).
  uint32_t block_items = 1;  // Items in each later block (at least 1).

  size_t BlockCount() const;
  // Position (0-based) of block b's first item, and its item count.
  uint32_t BlockBegin(size_t b) const;
  uint32_t BlockSize(size_t b) const;
  // The block of the item at 0-based `position`.
  size_t BlockOf(uint32_t position) const;

  std::string Serialize() const;
  // DataLoss for a value that is not a well-formed version-2 layout.
  static absl::StatusOr<BlockLayout> Parse(absl::string_view value);
  // Whether a layout value is version 2 (blocks), without parsing it.
  static bool IsBlocks(absl::string_view value);
};

// One block, parsed against its layout: the items' ids, and each item's
// text.
class BlockReader {
 public:
  // DataLoss if `value` is not a block of `layout`'s slots holding
  // layout.BlockSize(b) items (bytes after the last column included).
  static absl::StatusOr<BlockReader> Parse(const BlockLayout& layout, size_t b,
                                           absl::string_view value);
  size_t size() const { return count_; }
  // Item j's id.
  std::string id(size_t j) const;
  // Item j's text. ResourceExhausted past kMaxLogLineBytes.
  absl::StatusOr<std::string> Render(size_t j) const;

 private:
  struct Column {
    LogSlot kind;
    std::vector<int64_t> ints;   // kInt; kString indexes.
    std::vector<float> numbers;  // kNumber.
  };
  const BlockLayout* layout_ = nullptr;
  uint32_t begin_ = 0;
  uint32_t count_ = 0;
  std::string id_prefix_;
  std::vector<std::string> id_suffixes_;
  std::vector<Column> columns_;
};

// The text of a number slot: absl::SixDigits of the binary32 value.
void AppendLogNumberText(float value, std::string* out);

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_FORMAT_LOG_BLOCKS_H_
