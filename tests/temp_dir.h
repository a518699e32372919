// A fresh directory per test, removed afterwards, and the file helpers the tests share.
#pragma once

#include <dirent.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace gapbench::testing_files {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

inline bool file_exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// The partial files ("<path>.partial.XXXXXX", the name cut short when long) that runs writing
// `path` have left beside it.
inline std::vector<std::string> partial_files(const std::string& path) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  const std::string stem = path.substr(slash + 1, 200);
  std::vector<std::string> found;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind(stem, 0) == 0 && name.find(".partial.") != std::string::npos) {
        found.push_back(dir + "/" + name);
      }
    }
    closedir(d);
  }
  return found;
}

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/gapbench-test-XXXXXX";
    if (mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace gapbench::testing_files
