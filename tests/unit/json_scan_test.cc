// Unit tests of FindJsonValue (storage/json_scan.h): hand-picked cases, then
// a differential test against JsonPointer::Find on a parsed DOM over random
// documents written with random whitespace and escapes, then truncated and
// damaged texts.
#include "storage/json_scan.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "storage/json_pointer.h"

namespace feedd {
namespace {

using Tokens = std::vector<std::string>;

std::string Find(std::string_view json, const Tokens& tokens) {
  std::string_view value;
  switch (FindJsonValue(json, tokens, &value)) {
    case JsonScan::kFound:
      return std::string(value);
    case JsonScan::kMissing:
      return "<missing>";
    case JsonScan::kMalformed:
      return "<malformed>";
  }
  return "<?>";
}

TEST(JsonScanTest, FindsTopLevelMembersOfEveryKind) {
  const std::string item =
      R"({"id":"p1","n":-12.5e3,"t":true,"f":false,"z":null,"o":{"a":[1,{"b":"x"}]},"s":"a\"b"})";
  EXPECT_EQ(Find(item, {"id"}), R"("p1")");
  EXPECT_EQ(Find(item, {"n"}), "-12.5e3");
  EXPECT_EQ(Find(item, {"t"}), "true");
  EXPECT_EQ(Find(item, {"f"}), "false");
  EXPECT_EQ(Find(item, {"z"}), "null");
  EXPECT_EQ(Find(item, {"o"}), R"({"a":[1,{"b":"x"}]})");
  EXPECT_EQ(Find(item, {"s"}), R"("a\"b")");
  EXPECT_EQ(Find(item, {}), item);
}

TEST(JsonScanTest, FollowsNestedMembersAndArrayIndexes) {
  const std::string item = R"({"o":{"a":[1,{"b":"x"},[2,3]]}})";
  EXPECT_EQ(Find(item, {"o", "a", "0"}), "1");
  EXPECT_EQ(Find(item, {"o", "a", "1", "b"}), R"("x")");
  EXPECT_EQ(Find(item, {"o", "a", "2", "1"}), "3");
  EXPECT_EQ(Find(item, {"o", "a", "3"}), "<missing>");
  EXPECT_EQ(Find(item, {"o", "a", "01"}), "<missing>");  // not canonical
  EXPECT_EQ(Find(item, {"o", "a", "-"}), "<missing>");
  EXPECT_EQ(Find(item, {"o", "a", "0", "x"}), "<missing>");  // into a scalar
  EXPECT_EQ(Find(item, {"o", "b"}), "<missing>");
  EXPECT_EQ(Find(R"({"e":{},"a":[]})", {"e", "x"}), "<missing>");
  EXPECT_EQ(Find(R"({"e":{},"a":[]})", {"a", "0"}), "<missing>");
}

TEST(JsonScanTest, DoesNotMatchNamesOrValuesInsideStringsOrOtherMembers) {
  // "type" appears as text inside a string and as a nested member before the
  // top-level one.
  const std::string item =
      R"({"c":"\"type\":\"post\",","n":{"type":"like"},"q":"\\","type":"comment"})";
  EXPECT_EQ(Find(item, {"type"}), R"("comment")");
  EXPECT_EQ(Find(item, {"q"}), R"("\\")");
  EXPECT_EQ(Find(item, {"n", "type"}), R"("like")");
}

TEST(JsonScanTest, ComparesNamesAfterUnescaping) {
  EXPECT_EQ(Find(R"({"\u0074ype":"post"})", {"type"}), R"("post")");
  EXPECT_EQ(Find(R"({"a\"b":1,"a/b":2})", {"a\"b"}), "1");
  EXPECT_EQ(Find(R"({"a\/b":2})", {"a/b"}), "2");
  EXPECT_EQ(Find(R"({"caf\u00e9":3})", {"caf\xc3\xa9"}), "3");
}

TEST(JsonScanTest, AcceptsWhitespaceEverywhereJsonAllows) {
  const std::string item = " {\n \"a\" :\t[ 1 , { \"b\" : \"x\" } ] ,\r\n \"c\" : 7 } ";
  EXPECT_EQ(Find(item, {"a", "1", "b"}), R"("x")");
  EXPECT_EQ(Find(item, {"a", "1"}), R"({ "b" : "x" })");
  EXPECT_EQ(Find(item, {"c"}), "7");
}

TEST(JsonScanTest, ReportsTextThatIsNotJson) {
  EXPECT_EQ(Find("", {"a"}), "<malformed>");
  EXPECT_EQ(Find("", {}), "<malformed>");
  EXPECT_EQ(Find(R"({"a":1)", {"b"}), "<malformed>");
  EXPECT_EQ(Find(R"({"a" 1})", {"a"}), "<malformed>");
  EXPECT_EQ(Find(R"({"a":"unterminated})", {"b"}), "<malformed>");
  EXPECT_EQ(Find(R"({"a":{"b":1},"c")", {"d"}), "<malformed>");
  EXPECT_EQ(Find(R"({"a":1;"b":2})", {"b"}), "<malformed>");
  EXPECT_EQ(Find(R"({"a":1;"b":2})", {"a"}), "1");  // the value ends where a number cannot go on
  EXPECT_EQ(Find(R"({"a":[1,2)", {"a"}), "<malformed>");
  EXPECT_EQ(Find(R"({a:1})", {"a"}), "<malformed>");
}

// ---- differential test against the DOM ----

class RandomJson {
 public:
  explicit RandomJson(uint32_t seed) : rng_(seed) {}

  boost::json::value Value(int depth) {
    switch (Pick(depth > 0 ? 8 : 6)) {
      case 0:
        return nullptr;
      case 1:
        return Pick(2) == 0;
      case 2:
        return static_cast<int64_t>(rng_() % 2001) - 1000;
      case 3:
        return static_cast<double>(rng_() % 100000) / 64.0 - 500.0;
      case 4:
      case 5:
        return boost::json::string(Text());
      case 6: {
        boost::json::array a;
        for (int i = Pick(4); i > 0; --i) a.push_back(Value(depth - 1));
        return a;
      }
      default: {
        boost::json::object o;
        for (int i = Pick(5); i > 0; --i) o[Text()] = Value(depth - 1);
        return o;
      }
    }
  }

  // The text of `v` with random whitespace between tokens and, when
  // `escape_names`, some member names written with \u escapes.
  std::string Write(const boost::json::value& v, bool escape_names) {
    std::string out;
    WriteTo(v, escape_names, &out);
    return Space() + out + Space();
  }

  int Pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }

 private:
  std::string Text() {
    static const char* kPieces[] = {"a", "b", "type", "id", "\"", "\\",       "/",  "{", "}",
                                    "[", "]", ",",    ":",  " ",  "\xc3\xa9", "\n", "x1"};
    std::string s;
    for (int i = Pick(4); i > 0; --i) s += kPieces[Pick(17)];
    return s;
  }

  std::string Space() {
    static const char* kSpaces[] = {"", "", "", " ", "\n", "\t ", "\r\n"};
    return kSpaces[Pick(7)];
  }

  void WriteTo(const boost::json::value& v, bool escape_names, std::string* out) {
    if (const auto* o = v.if_object()) {
      *out += "{";
      bool first = true;
      for (const auto& m : *o) {
        if (!first) *out += Space() + "," + Space();
        first = false;
        *out += Space() + Name(m.key(), escape_names) + Space() + ":" + Space();
        WriteTo(m.value(), escape_names, out);
      }
      *out += Space() + "}";
    } else if (const auto* a = v.if_array()) {
      *out += "[";
      for (size_t i = 0; i < a->size(); ++i) {
        if (i > 0) *out += Space() + "," + Space();
        WriteTo((*a)[i], escape_names, out);
      }
      *out += Space() + "]";
    } else {
      *out += boost::json::serialize(v);
    }
  }

  std::string Name(std::string_view name, bool escape_names) {
    if (!escape_names || Pick(2) == 0) return boost::json::serialize(boost::json::string(name));
    std::string out = "\"";
    for (unsigned char c : name) {
      char buf[8];
      if (c < 0x80 && Pick(2) == 0) {
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c < 0x20) {
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
    }
    return out + "\"";
  }

  std::mt19937 rng_;
};

// Every path of `v` (objects' members and arrays' elements), and for each a
// sibling that is absent.
void Paths(const boost::json::value& v, Tokens prefix, std::vector<Tokens>* out) {
  out->push_back(prefix);
  if (const auto* o = v.if_object()) {
    Tokens absent = prefix;
    absent.push_back("no such member");
    out->push_back(absent);
    for (const auto& m : *o) {
      Tokens t = prefix;
      t.emplace_back(m.key());
      Paths(m.value(), t, out);
    }
  } else if (const auto* a = v.if_array()) {
    Tokens absent = prefix;
    absent.push_back(std::to_string(a->size()));
    out->push_back(absent);
    for (size_t i = 0; i < a->size(); ++i) {
      Tokens t = prefix;
      t.push_back(std::to_string(i));
      Paths((*a)[i], t, out);
    }
  }
}

std::string PointerText(const Tokens& tokens) {
  std::string text;
  for (const auto& t : tokens) {
    text += '/';
    for (char c : t) text += c == '~' ? "~0" : (c == '/' ? "~1" : std::string(1, c));
  }
  return text;
}

TEST(JsonScanTest, AgreesWithTheDomOnRandomDocuments) {
  RandomJson gen(20261121);
  size_t lookups = 0;
  for (int doc = 0; doc < 400; ++doc) {
    boost::json::object root;
    for (int i = gen.Pick(6) + 1; i > 0; --i) root["k" + std::to_string(i)] = gen.Value(3);
    const boost::json::value dom = root;
    const std::string text = gen.Write(dom, doc % 2 == 1);
    ASSERT_EQ(boost::json::parse(text), dom) << text;
    std::vector<Tokens> paths;
    Paths(dom, {}, &paths);
    for (const auto& tokens : paths) {
      auto pointer = JsonPointer::Parse(PointerText(tokens));
      ASSERT_TRUE(pointer.ok());
      const boost::json::value* expected = pointer->Find(dom);
      std::string_view found;
      JsonScan r = FindJsonValue(text, tokens, &found);
      ++lookups;
      if (expected == nullptr) {
        EXPECT_EQ(r, JsonScan::kMissing) << PointerText(tokens) << " in " << text;
      } else {
        ASSERT_EQ(r, JsonScan::kFound) << PointerText(tokens) << " in " << text;
        EXPECT_EQ(boost::json::parse(found), *expected) << PointerText(tokens) << " in " << text;
      }
    }
  }
  EXPECT_GT(lookups, 3000u);
}

TEST(JsonScanTest, TruncatedTextIsNeverReadPastItsEnd) {
  RandomJson gen(7);
  for (int doc = 0; doc < 100; ++doc) {
    boost::json::object root;
    for (int i = gen.Pick(5) + 1; i > 0; --i) root["k" + std::to_string(i)] = gen.Value(3);
    const std::string text = gen.Write(root, true);
    std::vector<Tokens> paths;
    Paths(root, {}, &paths);
    for (size_t cut = 0; cut < text.size(); ++cut) {
      // Each truncation is its own allocation so that a read past its end is
      // caught by AddressSanitizer (FEEDD_SANITIZE=1).
      const std::unique_ptr<char[]> copy(new char[cut]);
      std::memcpy(copy.get(), text.data(), cut);
      const std::string_view truncated(copy.get(), cut);
      for (const auto& tokens : paths) {
        std::string_view found;
        if (FindJsonValue(truncated, tokens, &found) == JsonScan::kFound) {
          EXPECT_GE(found.data(), truncated.data());
          EXPECT_LE(found.data() + found.size(), truncated.data() + truncated.size());
        }
      }
    }
  }
}

}  // namespace
}  // namespace feedd

namespace feedd {
namespace {

// FindJsonMembers finds, in one pass, what FindJsonValue finds member by member.
TEST(JsonScanTest, FindJsonMembersAgreesWithFindJsonValue) {
  const std::string json =
      "{ \"a\" : 1 , \"b\":\"x,}\" ,\"n\":{\"c\":[1,{\"d\":2}]},\"e\\u0073c\":true,"
      "\"a\":99, \"last\" :\tnull \n}";
  const std::vector<std::string> names = {"last", "n", "esc", "a", "missing", "b"};
  std::vector<std::optional<std::string_view>> values;
  ASSERT_EQ(FindJsonMembers(json, names, &values), JsonScan::kFound);
  ASSERT_EQ(values.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    SCOPED_TRACE(names[i]);
    std::string_view one;
    JsonScan found = FindJsonValue(json, {names[i]}, &one);
    ASSERT_EQ(values[i].has_value(), found == JsonScan::kFound);
    if (values[i]) {
      EXPECT_EQ(*values[i], one);
    }
  }
  EXPECT_EQ(*values[3], "1") << "the first member of a name wins";
  EXPECT_EQ(*values[0], "null");

  // Not an object, empty object, malformed text.
  EXPECT_EQ(FindJsonMembers("[1]", names, &values), JsonScan::kMissing);
  EXPECT_EQ(FindJsonMembers("{}", names, &values), JsonScan::kFound);
  EXPECT_FALSE(values[0].has_value());
  EXPECT_EQ(FindJsonMembers("{\"a\":1,", names, &values), JsonScan::kMalformed);
  EXPECT_EQ(FindJsonMembers("{\"a\" 1}", names, &values), JsonScan::kMalformed);
  // Stops once every name is found: what follows is not visited.
  EXPECT_EQ(FindJsonMembers("{\"a\":1,\"b\":2, garbage", {"a", "b"}, &values), JsonScan::kFound);
  EXPECT_EQ(*values[1], "2");
}

// With a path, the members of the object it names: what FindJsonValue finds
// at the path and the name, and nothing after the last name is visited.
TEST(JsonScanTest, FindJsonMembersAtAPathAgreesWithFindJsonValue) {
  const std::string envelope =
      "{\"lsn\":7,\"before\":{\"userId\":\"old\"},\"after\":{\"id\":\"c1\","
      "\"user\\u0049d\":\"u1\",\"n\":[1,{\"x\":2}],\"userUsername\":\"ana\",\"content\":\"...\"}}";
  const std::vector<std::string> names = {"userUsername", "userId", "n", "missing"};
  std::vector<std::optional<std::string_view>> values;
  ASSERT_EQ(FindJsonMembers(envelope, {"after"}, names, &values), JsonScan::kFound);
  for (size_t i = 0; i < names.size(); ++i) {
    SCOPED_TRACE(names[i]);
    std::string_view one;
    JsonScan found = FindJsonValue(envelope, {"after", names[i]}, &one);
    ASSERT_EQ(values[i].has_value(), found == JsonScan::kFound);
    if (values[i]) {
      EXPECT_EQ(*values[i], one);
    }
  }
  EXPECT_EQ(*values[1], "\"u1\"");
  EXPECT_EQ(*values[2], "[1,{\"x\":2}]");

  // A path into arrays; nothing at the path, or not an object there.
  ASSERT_EQ(FindJsonMembers(envelope, {"after", "n", "1"}, {"x"}, &values), JsonScan::kFound);
  EXPECT_EQ(*values[0], "2");
  EXPECT_EQ(FindJsonMembers(envelope, {"nowhere"}, names, &values), JsonScan::kMissing);
  EXPECT_EQ(FindJsonMembers(envelope, {"lsn"}, names, &values), JsonScan::kMissing);
  EXPECT_EQ(FindJsonMembers("{\"after\":null}", {"after"}, names, &values), JsonScan::kMissing);
  EXPECT_EQ(FindJsonMembers("{\"after\":{\"a\" 1}}", {"after"}, {"a"}, &values),
            JsonScan::kMalformed);
  // Stops at the last name: the rest of the envelope is not visited.
  EXPECT_EQ(FindJsonMembers("{\"after\":{\"a\":1,\"b\":2, garbage", {"after"}, {"a", "b"}, &values),
            JsonScan::kFound);
}

}  // namespace
}  // namespace feedd
