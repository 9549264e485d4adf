#include "tests/support/test_certs.h"

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace rankwire::test {
namespace {

absl::Status Run(const std::string& dir, const std::string& command) {
  const std::string full = absl::StrCat("cd '", dir, "' && ", command, " >>openssl.log 2>&1");
  if (std::system(full.c_str()) != 0) {
    std::ifstream log(dir + "/openssl.log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    return absl::InternalError(absl::StrCat("failed: ", command, "\n", text));
  }
  return absl::OkStatus();
}

// A self-signed CA: <name>.pem and <name>.key.
absl::Status MakeCa(const std::string& dir, const std::string& name) {
  return Run(dir, absl::StrCat("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
                               "-nodes -days 2 -subj /CN=rankwire-test-",
                               name, " -keyout ", name, ".key -out ", name,
                               ".pem -addext basicConstraints=critical,CA:TRUE "
                               "-addext keyUsage=critical,keyCertSign,cRLSign"));
}

// A leaf certificate <name>.pem/<name>.key signed by CA <ca>, with `ext`
// (an extension config line).
absl::Status MakeLeaf(const std::string& dir, const std::string& name, const std::string& ca,
                      const std::string& ext) {
  {
    std::ofstream out(absl::StrCat(dir, "/", name, ".ext"));
    out << ext << "\n";
  }
  if (absl::Status s = Run(dir, absl::StrCat("openssl req -newkey ec -pkeyopt "
                                             "ec_paramgen_curve:prime256v1 -nodes -subj /CN=",
                                             name, " -keyout ", name, ".key -out ", name, ".csr"));
      !s.ok()) {
    return s;
  }
  return Run(
      dir, absl::StrCat("openssl x509 -req -days 2 -in ", name, ".csr -CA ", ca, ".pem -CAkey ", ca,
                        ".key -CAcreateserial -out ", name, ".pem -extfile ", name, ".ext"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<TestCerts>> TestCerts::Make() {
  char tmpl[] = "/tmp/rankwire-certs-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return absl::InternalError("mkdtemp failed");
  auto certs = std::unique_ptr<TestCerts>(new TestCerts(tmpl));
  const std::string& dir = certs->dir_;
  for (absl::Status s : {
           MakeCa(dir, "ca"),
           MakeLeaf(dir, "server", "ca",
                    "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth"),
           MakeLeaf(dir, "client", "ca", "extendedKeyUsage=clientAuth"),
           MakeCa(dir, "other-ca"),
           MakeLeaf(dir, "other-client", "other-ca", "extendedKeyUsage=clientAuth"),
       }) {
    if (!s.ok()) return s;
  }
  return certs;
}

TestCerts::~TestCerts() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

}  // namespace rankwire::test
