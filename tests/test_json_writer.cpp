#include "fixtures/json_writer.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace gapbench {
namespace {

// ---- escaping ---------------------------------------------------------------------------------

TEST(DoctorJson, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(json_escape("plain text 1.0"), "plain text 1.0");
  EXPECT_EQ(json_escape("say \"hi\""), "say \\\"hi\\\"");
  EXPECT_EQ(json_escape("C:\\path"), "C:\\\\path");
  EXPECT_EQ(json_escape("a\nb\tc\rd\be\ff"), "a\\nb\\tc\\rd\\be\\ff");
  EXPECT_EQ(json_escape(std::string("nul\0end", 7)), "nul\\u0000end");
  EXPECT_EQ(json_escape("\x01\x1f"), "\\u0001\\u001f");
  EXPECT_EQ(json_escape("/"), "/");
}

TEST(DoctorJson, KeepsUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(json_escape("Intel\xC2\xAE Xeon\xE2\x84\xA2"), "Intel\xC2\xAE Xeon\xE2\x84\xA2");
  EXPECT_EQ(json_escape("\xF0\x9F\x9A\x80"), "\xF0\x9F\x9A\x80");
  EXPECT_EQ(json_escape("bad\xFF"), "bad\\ufffd");
  EXPECT_EQ(json_escape("cut\xE2\x84"), "cut\\ufffd\\ufffd");
  EXPECT_EQ(json_escape("\xED\xA0\x80"), "\\ufffd\\ufffd\\ufffd");  // a UTF-16 surrogate
}

TEST(JsonString, QuotesTheEscapedText) {
  EXPECT_EQ(json_string(""), "\"\"");
  EXPECT_EQ(json_string("say \"hi\"\n"), "\"say \\\"hi\\\"\\n\"");
}

TEST(JsonString, NumbersAsJsonSpellsThem) {
  for (const char* number : {"0", "-1", "16", "63.02", "1e9", "2.5E-3"})
    EXPECT_TRUE(is_json_number(number)) << number;
  for (const char* other : {"", "13.0a", "0x10", "+5", ".5", "5.", "01", "inf", "nan", " 1"})
    EXPECT_FALSE(is_json_number(other)) << other;
}

// ---- the writer -------------------------------------------------------------------------------

// doctor --json's shape: members on lines of their own, findings one to a line.
TEST(JsonWriter, LinesIndentTwoSpacesAndOneLineContainersStayOnTheirLine) {
  JsonWriter json;
  json.begin_object().key("facts").begin_object();
  json.key("cpu.cores").number("16").key("cpu.model").string("AMD \"EPYC\"");
  json.end_object().key("findings").begin_array();
  json.begin_object(JsonWriter::Layout::one_line).key("id").string("a").key("n").number("1");
  json.end_object();
  json.begin_object(JsonWriter::Layout::one_line).key("id").string("b").end_object();
  json.end_array().end_object();
  EXPECT_EQ(json.text(),
            "{\n"
            "  \"facts\": {\n"
            "    \"cpu.cores\": 16,\n"
            "    \"cpu.model\": \"AMD \\\"EPYC\\\"\"\n"
            "  },\n"
            "  \"findings\": [\n"
            "    {\"id\": \"a\", \"n\": 1},\n"
            "    {\"id\": \"b\"}\n"
            "  ]\n"
            "}\n");
}

TEST(JsonWriter, EmptyContainersAreClosedOnTheirLine) {
  JsonWriter json;
  json.begin_object().key("facts").begin_object().end_object();
  json.key("findings").begin_array().end_array().end_object();
  EXPECT_EQ(json.text(), "{\n  \"facts\": {},\n  \"findings\": []\n}\n");
  JsonWriter one_line;
  one_line.begin_array(JsonWriter::Layout::one_line).string("x").number("2").end_array();
  EXPECT_EQ(one_line.text(), "[\"x\", 2]\n");
}

// A value that is not a JSON number is written as a string: the document still parses.
TEST(JsonWriter, NumberThatIsNotOneIsAString) {
  JsonWriter json;
  json.begin_array(JsonWriter::Layout::one_line).number("12.5").number("13.0a").number("0x10");
  json.end_array();
  EXPECT_EQ(json.text(), "[12.5, \"13.0a\", \"0x10\"]\n");
}

TEST(JsonWriter, MisuseIsALogicError) {
  {
    JsonWriter json;
    json.begin_object();
    EXPECT_THROW(json.string("no key"), std::logic_error);
  }
  {
    JsonWriter json;
    json.begin_array();
    EXPECT_THROW(json.key("not in an object"), std::logic_error);
    EXPECT_THROW(json.end_object(), std::logic_error);
  }
  {
    JsonWriter json;
    json.begin_object().key("a");
    EXPECT_THROW(json.key("b"), std::logic_error);
    EXPECT_THROW(json.end_object(), std::logic_error);  // "a" has no value
  }
  {
    JsonWriter json;
    EXPECT_THROW(json.text(), std::logic_error);  // nothing written
    json.begin_object();
    EXPECT_THROW(json.text(), std::logic_error);  // still open
    json.end_object();
    EXPECT_EQ(json.text(), "{}\n");
    EXPECT_THROW(json.string("second"), std::logic_error);
  }
}

}  // namespace
}  // namespace gapbench
