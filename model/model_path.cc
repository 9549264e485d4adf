#include "model/model_path.h"

#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace rankwire {

absl::StatusOr<std::string> ResolveModelPath(const std::string& flag,
                                             const std::string& executable) {
  namespace fs = std::filesystem;
  const fs::path given(flag);
  std::vector<fs::path> candidates = {given};
  if (given.is_relative() && !executable.empty()) {
    const fs::path dir = fs::path(executable).parent_path();
    candidates.push_back(dir / "models" / given.filename());
    candidates.push_back(dir / ".." / "share" / "rankwire" / "models" / given.filename());
  }
  std::vector<std::string> tried;
  for (const fs::path& candidate : candidates) {
    // /proc/self/exe has no symlinks left, so ".." may be resolved lexically.
    const fs::path path = candidate.lexically_normal();
    std::error_code error;
    if (fs::is_regular_file(path, error) || fs::is_directory(path, error)) return path.string();
    tried.push_back(path.string());
  }
  return absl::NotFoundError(
      absl::StrCat("--model=", flag, ": no model file at ", absl::StrJoin(tried, ", ")));
}

std::string ExecutablePath() {
  std::error_code error;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string() : exe.string();
}

}  // namespace rankwire
