#include "model/model_loader.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/stable_hash.h"
#include "base/status_macros.h"
#include "base/status_reason.h"
#include "model/linear/linear_model.h"
#include "model/linear/linear_spec.h"
#include "rank/v1/rank.pb.h"
#include "request/request_view.h"

namespace rankwire {
namespace {

constexpr uint64_t kMaxManifestBytes = 1 << 20;
// What a manifest error shows: the smallest whole manifest.
constexpr char kManifestForm[] =
    "a manifest is a header, its lines and an end, e.g. the three lines "
    "\"rankwire-manifest 1\" / \"model <file or version directory>\" / \"end\"";

absl::Status ManifestError(const std::string& path, int line, absl::string_view problem) {
  return WithReason(absl::InvalidArgumentError(absl::StrCat(path, ":", line, ": ", problem)),
                    "manifest");
}

// "7", "2026.12.06.1": numbers separated by dots, as numbers (nullopt
// otherwise).
std::optional<std::vector<uint64_t>> ParseVersion(absl::string_view text) {
  if (text.empty()) return std::nullopt;
  std::vector<uint64_t> parts;
  for (absl::string_view part : absl::StrSplit(text, '.')) {
    uint64_t v = 0;
    if (part.empty() || part.size() > 18 || !absl::ascii_isdigit(part[0]) ||
        !absl::SimpleAtoi(part, &v)) {
      return std::nullopt;
    }
    parts.push_back(v);
  }
  return parts;
}

std::string Join(const std::string& dir, absl::string_view name) {
  if (!dir.empty() && dir.back() == '/') return absl::StrCat(dir, name);
  return absl::StrCat(dir, "/", name);
}

std::string BaseName(absl::string_view path) {
  while (absl::ConsumeSuffix(&path, "/")) {
  }
  const size_t slash = path.rfind('/');
  return std::string(slash == absl::string_view::npos ? path : path.substr(slash + 1));
}

std::string Stem(absl::string_view file) {
  std::string name = BaseName(file);
  const size_t dot = name.find('.');
  return dot == std::string::npos ? name : name.substr(0, dot);
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The newest "<version>.model" / "<version>.json" in `dir`, as an entry.
absl::StatusOr<ModelPlan::Entry> NewestVersion(const std::string& dir, ModelPlan* plan) {
  ASSIGN_OR_RETURN(FileStamp dir_stamp, StampOf(dir));
  plan->watched.emplace_back(dir, dir_stamp);
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return StampOf(Join(dir, ".")).status();  // The errno, with a reason.
  // (version, file name), every versioned file of the directory.
  std::vector<std::pair<std::vector<uint64_t>, std::string>> versions;
  while (const dirent* e = readdir(d)) {
    const absl::string_view name = e->d_name;
    if (name.empty() || name[0] == '.') continue;
    absl::string_view version = name;
    if (!absl::ConsumeSuffix(&version, ".model") && !absl::ConsumeSuffix(&version, ".json")) {
      continue;
    }
    std::optional<std::vector<uint64_t>> parsed = ParseVersion(version);
    if (!parsed) continue;
    versions.emplace_back(*std::move(parsed), std::string(name));
  }
  closedir(d);
  if (versions.empty()) {
    return WithReason(
        absl::NotFoundError(absl::StrCat(dir,
                                         ": no model file named <version>.model or <version>.json "
                                         "(and no ",
                                         kManifestName, ")")),
        "not_found");
  }
  // Newest first (a tie in version: the greater name first).
  std::sort(versions.begin(), versions.end(), [](const auto& a, const auto& b) { return a > b; });
  auto entry_of = [&dir](const std::string& file) {
    ModelPlan::Entry entry;
    entry.path = Join(dir, file);
    entry.name_hint = BaseName(dir);
    entry.version_hint = file.substr(0, file.rfind('.'));
    return entry;
  };
  ModelPlan::Entry entry = entry_of(versions.front().second);
  for (size_t i = 1; i < versions.size() && i <= kMaxOlderVersions; ++i) {
    entry.older.push_back(entry_of(versions[i].second));
  }
  return entry;
}

// A file or a version directory, as an entry.
absl::StatusOr<ModelPlan::Entry> EntryFor(const std::string& path, ModelPlan* plan) {
  if (IsDirectory(path)) return NewestVersion(path, plan);
  ModelPlan::Entry entry;
  entry.path = path;
  entry.name_hint = Stem(path);
  const std::string base = BaseName(path);
  absl::string_view version = base;
  if ((absl::ConsumeSuffix(&version, ".model") || absl::ConsumeSuffix(&version, ".json")) &&
      ParseVersion(version)) {
    // A versioned file named directly: its directory names it.
    const size_t slash = path.rfind('/');
    entry.name_hint =
        slash == std::string::npos ? entry.name_hint : BaseName(path.substr(0, slash));
    entry.version_hint = std::string(version);
  }
  return entry;
}

// The entry of a model a manifest line names (relative to the manifest's
// directory), its errors naming the manifest's line.
absl::StatusOr<ModelPlan::Entry> ManifestEntry(const std::string& manifest, int line,
                                               absl::string_view prefix, absl::string_view model,
                                               ModelPlan* plan) {
  const std::string dir = manifest.substr(0, manifest.rfind('/'));
  const std::string path = absl::StartsWith(model, "/") ? std::string(model) : Join(dir, model);
  absl::StatusOr<ModelPlan::Entry> entry = EntryFor(path, plan);
  if (!entry.ok()) {
    return WithReason(
        absl::Status(entry.status().code(),
                     absl::StrCat(manifest, ":", line, ": ", prefix, entry.status().message())),
        ReasonOf(entry.status()).value_or("manifest"));
  }
  return entry;
}

absl::Status ParseManifest(const std::string& path, const std::string& text, ModelPlan* plan) {
  int number = 0;
  bool header = false, end = false;
  bool single = false;  // A "model" line: one model for every user.
  absl::flat_hash_set<std::string> buckets;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++number;
    absl::string_view line = raw;
    if (size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
    std::vector<absl::string_view> t =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (t.empty()) continue;
    if (end) return ManifestError(path, number, "a directive after \"end\"");
    if (!header) {
      if (t.size() != 2 || t[0] != "rankwire-manifest" || t[1] != "1") {
        return ManifestError(
            path, number,
            absl::StrCat("the header line \"rankwire-manifest 1\" is missing (the first line is \"",
                         absl::StripAsciiWhitespace(line), "\"); ", kManifestForm));
      }
      header = true;
      continue;
    }
    if (t[0] == "end" && t.size() == 1) {
      end = true;
    } else if (t[0] == "model") {
      if (t.size() != 2 || !plan->entries.empty()) {
        return ManifestError(path, number,
                             "expected one \"model <model>\" line, and no bucket lines with it");
      }
      ASSIGN_OR_RETURN(ModelPlan::Entry entry, ManifestEntry(path, number, "", t[1], plan));
      plan->entries.push_back(std::move(entry));
      single = true;
    } else if (t[0] == "bucket") {
      if (single) {
        return ManifestError(path, number, "a bucket line after a \"model\" line");
      }
      int percent = 0;
      if (t.size() != 4 || !absl::SimpleAtoi(t[2], &percent) || percent < 1 || percent > 100) {
        return ManifestError(path, number, "expected \"bucket <name> <percent 1..100> <model>\"");
      }
      if (!buckets.insert(std::string(t[1])).second) {
        return ManifestError(path, number, absl::StrCat("bucket \"", t[1], "\" named twice"));
      }
      ASSIGN_OR_RETURN(
          ModelPlan::Entry entry,
          ManifestEntry(path, number, absl::StrCat("bucket ", t[1], ": "), t[3], plan));
      entry.bucket = std::string(t[1]);
      entry.percent = percent;
      plan->entries.push_back(std::move(entry));
    } else if (t[0] == "item_features" || t[0] == "user_features" || t[0] == "context_features") {
      if (!plan->supplied) plan->supplied.emplace();
      std::vector<std::string>& list = t[0] == "item_features"   ? plan->supplied->item
                                       : t[0] == "user_features" ? plan->supplied->user
                                                                 : plan->supplied->context;
      for (size_t i = 1; i < t.size(); ++i) list.emplace_back(t[i]);
    } else {
      return ManifestError(path, number, absl::StrCat("unknown directive \"", t[0], "\""));
    }
  }
  if (!header) return ManifestError(path, number, absl::StrCat("empty manifest; ", kManifestForm));
  if (!end) {
    return WithReason(ManifestError(path, number,
                                    absl::StrCat("no \"end\" line: the manifest is truncated (or "
                                                 "was read while being written); ",
                                                 kManifestForm)),
                      "truncated");
  }
  if (single) return absl::OkStatus();
  int total = 0;
  for (const ModelPlan::Entry& e : plan->entries) total += e.percent;
  if (plan->entries.empty() || total != 100) {
    return ManifestError(path, number, absl::StrCat("bucket percents sum to ", total, ", not 100"));
  }
  plan->bucketed = true;
  return absl::OkStatus();
}

// A .json file's first bytes: InvalidArgument (reason "empty" or
// "invalid_model") unless they can start XGBoost's JSON.
absl::Status CheckJsonStart(const std::string& path, absl::string_view text) {
  if (text.empty()) {
    return WithReason(
        absl::InvalidArgumentError(absl::StrCat(path, ": not valid JSON: the file is empty")),
        "empty");
  }
  if (text[0] == '{') return absl::OkStatus();
  const absl::string_view first = text.substr(0, std::min(text.find('\n'), size_t{40}));
  return WithReason(
      absl::InvalidArgumentError(absl::StrCat(
          path, ": not valid JSON: it starts with \"", absl::CHexEscape(first),
          "\", not '{' as an XGBoost model saved with save_model(\"x.json\") does",
          absl::StartsWith(text, "rankwire-model ") ||
                  absl::StrContains(text.substr(0, 4096), "\nrankwire-model ")
              ? " (it is a linear model: name it <version>.model, or any name not ending in .json)"
              : "")),
      "invalid_model");
}

// 12 hex digits of the file's bytes: a version for a model that names none.
std::string ContentVersion(absl::string_view bytes) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(StableHash(bytes)));
  return absl::StrCat("sha-", absl::string_view(hex, 12));
}

// The names in `reads` that `supplied` lacks, with `prefix`, into missing.
void Unsupplied(const std::vector<std::string>& reads, const std::vector<std::string>& supplied,
                absl::string_view prefix, std::vector<std::string>* missing) {
  for (const std::string& name : reads) {
    if (std::find(supplied.begin(), supplied.end(), name) == supplied.end()) {
      missing->push_back(absl::StrCat(prefix, name));
    }
  }
}

}  // namespace

std::string RefusalReason(const absl::Status& status) {
  if (std::optional<std::string> reason = ReasonOf(status)) {
    for (const char* known : kRefusalReasons) {
      if (*reason == known) return *reason;
    }
  }
  return status.code() == absl::StatusCode::kUnimplemented ? "unsupported" : "invalid_model";
}

absl::StatusOr<ModelPlan> PlanModels(const std::string& source) {
  ModelPlan plan;
  plan.source = source;
  if (!IsDirectory(source)) {
    ASSIGN_OR_RETURN(FileStamp stamp, StampOf(source));
    (void)stamp;  // The file's stamp is the loaded model's (LoadModel).
    ASSIGN_OR_RETURN(ModelPlan::Entry entry, EntryFor(source, &plan));
    plan.entries.push_back(std::move(entry));
    return plan;
  }
  const std::string manifest = Join(source, kManifestName);
  absl::StatusOr<FileStamp> manifest_stamp = StampOf(manifest);
  if (!manifest_stamp.ok()) {
    // No manifest: the directory's newest version (the directory's stamp
    // changes when one is added or a manifest appears).
    ASSIGN_OR_RETURN(ModelPlan::Entry entry, NewestVersion(source, &plan));
    plan.entries.push_back(std::move(entry));
    return plan;
  }
  absl::StatusOr<CheckedFile> file = ReadFileChecked(manifest, kMaxManifestBytes);
  if (!file.ok()) return file.status();
  ASSIGN_OR_RETURN(FileStamp dir_stamp, StampOf(source));
  plan.watched.emplace_back(source, dir_stamp);
  plan.watched.emplace_back(manifest, file->stamp);
  RETURN_IF_ERROR(ParseManifest(manifest, file->bytes, &plan));
  return plan;
}

absl::StatusOr<LoadedModel> LoadModel(const ModelPlan::Entry& entry,
                                      const ModelLoadOptions& options) {
  ASSIGN_OR_RETURN(CheckedFile file, ReadFileChecked(entry.path, options.max_file_bytes));
  LoadedModel loaded;
  loaded.stamp = file.stamp;
  const absl::string_view text = absl::StripLeadingAsciiWhitespace(file.bytes);
  // A file named .json is read as JSON whatever it holds, so an empty or
  // non-JSON one is told so (not taken for a broken linear model).
  if (absl::EndsWith(entry.path, ".json")) RETURN_IF_ERROR(CheckJsonStart(entry.path, text));
  if (!text.empty() && text[0] == '{') {
    xgboost::XGBoostLoadOptions xgboost = options.xgboost;
    xgboost.max_file_bytes = options.max_file_bytes;
    ASSIGN_OR_RETURN(xgboost::XGBoostSpec model,
                     xgboost::XGBoostSpec::Parse(file.bytes, entry.path, xgboost));
    std::string name = !model.name().empty() ? model.name() : entry.name_hint;
    std::string version = !model.version().empty()      ? model.version()
                          : !entry.version_hint.empty() ? entry.version_hint
                                                        : ContentVersion(file.bytes);
    loaded.model = std::make_shared<const XGBoostModel>(model, std::move(name), std::move(version),
                                                        options.explain);
    return loaded;
  }
  ASSIGN_OR_RETURN(LinearSpec model, LinearSpec::Parse(file.bytes, entry.path));
  loaded.model = std::make_shared<const LinearModel>(std::move(model));
  return loaded;
}

absl::Status CheckSupplied(const Model& model, const std::optional<ModelInputs>& supplied,
                           bool allow_unsupplied_features) {
  const ModelInputs& reads = model.inputs();
  if (supplied.has_value() && !allow_unsupplied_features) {
    std::vector<std::string> missing;
    Unsupplied(reads.item, supplied->item, "", &missing);
    Unsupplied(reads.user, supplied->user, "user.", &missing);
    Unsupplied(reads.context, supplied->context, "ctx.", &missing);
    if (!missing.empty()) {
      return WithReason(
          absl::FailedPreconditionError(absl::StrCat(model.full_version(),
                                                     " reads features the manifest says callers "
                                                     "do not send: ",
                                                     absl::StrJoin(missing, ", "))),
          "unknown_feature");
    }
  }
  return absl::OkStatus();
}

}  // namespace rankwire
