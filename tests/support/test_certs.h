// TestCerts makes, with the openssl command at run time, what TLS tests
// need: a CA, a server certificate for "localhost" and 127.0.0.1 signed by
// it, a client certificate signed by it, and a second CA with a client
// certificate of its own (one the server must refuse). Files live in a
// temporary directory removed when the object is destroyed.
//
// Thread safety: one thread.
#ifndef RANKWIRE_TESTS_SUPPORT_TEST_CERTS_H_
#define RANKWIRE_TESTS_SUPPORT_TEST_CERTS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace rankwire::test {

class TestCerts {
 public:
  static absl::StatusOr<std::unique_ptr<TestCerts>> Make();
  ~TestCerts();
  TestCerts(const TestCerts&) = delete;
  TestCerts& operator=(const TestCerts&) = delete;

  std::string ca() const { return Path("ca.pem"); }
  std::string server_cert() const { return Path("server.pem"); }
  std::string server_key() const { return Path("server.key"); }
  std::string client_cert() const { return Path("client.pem"); }
  std::string client_key() const { return Path("client.key"); }
  std::string other_ca() const { return Path("other-ca.pem"); }
  std::string other_client_cert() const { return Path("other-client.pem"); }
  std::string other_client_key() const { return Path("other-client.key"); }
  const std::string& dir() const { return dir_; }

 private:
  explicit TestCerts(std::string dir) : dir_(std::move(dir)) {}
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  std::string dir_;
};

}  // namespace rankwire::test

#endif  // RANKWIRE_TESTS_SUPPORT_TEST_CERTS_H_
