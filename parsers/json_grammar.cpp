// The strict JSON grammar checker of json_grammar.h.
#include "json_grammar.h"

namespace replay {
namespace {

bool is_blank(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}
bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

// Where a number is: what may follow, and whether it may end here.
enum Number : std::uint8_t {
    kMinus,     // after '-': a digit
    kZero,      // a leading 0: '.', 'e' or the end
    kInteger,   // in the integer digits
    kPoint,     // after '.': a digit
    kFraction,  // in the fraction digits
    kE,         // after 'e': a sign or a digit
    kESign,     // after the exponent's sign: a digit
    kExponent,  // in the exponent digits
};
bool may_end(std::uint8_t number) {
    return number == kZero || number == kInteger || number == kFraction || number == kExponent;
}

}  // namespace

JsonGrammar::Status JsonGrammar::feed(const char* p, std::size_t n, bool at_end) {
    for (std::size_t i = 0; i < n; ++i) {
        const bool in_number = expect_ == Expect::InNumber;
        if (!step(p[i])) return Status::Invalid;
        if (complete_) {
            // A number at the top ends before the byte that ended it.
            if (!(in_number && expect_ == Expect::InNumber)) ++consumed_;
            return Status::Complete;
        }
        ++consumed_;
    }
    if (at_end && expect_ == Expect::InNumber && may_end(number_) && stack_.empty()) {
        complete_ = true;
        return Status::Complete;
    }
    return Status::Valid;
}

bool JsonGrammar::expects_array_element() const {
    return !stack_.empty() && stack_.back() == '[' &&
           (expect_ == Expect::ElementOrEnd || expect_ == Expect::Element);
}

bool JsonGrammar::after_value() {
    if (stack_.empty())
        complete_ = true;
    else
        expect_ = Expect::CommaOrEnd;
    return true;
}

bool JsonGrammar::start_value(char c) {
    switch (c) {
        case '"':
            key_ = false;
            expect_ = Expect::InString;
            return true;
        case '[':
        case '{':
            if (stack_.size() >= kMaxDepth) return false;
            stack_.push_back(c);
            expect_ = c == '[' ? Expect::ElementOrEnd : Expect::KeyOrEnd;
            return true;
        case 't':
            literal_ = "rue";
            expect_ = Expect::InLiteral;
            return true;
        case 'f':
            literal_ = "alse";
            expect_ = Expect::InLiteral;
            return true;
        case 'n':
            literal_ = "ull";
            expect_ = Expect::InLiteral;
            return true;
        case '-':
            number_ = kMinus;
            expect_ = Expect::InNumber;
            return true;
        default:
            if (!is_digit(c)) return false;
            number_ = c == '0' ? kZero : kInteger;
            expect_ = Expect::InNumber;
            return true;
    }
}

bool JsonGrammar::step(char c) {
    switch (expect_) {
        case Expect::InString:
            if (escaped_) {
                escaped_ = false;
            } else if (c == '\\') {
                escaped_ = true;
            } else if (c == '"') {
                if (!key_) return after_value();
                key_ = false;
                expect_ = Expect::Colon;
            }
            return true;
        case Expect::InNumber:
            if (is_digit(c)) {
                switch (number_) {
                    case kMinus:
                        number_ = c == '0' ? kZero : kInteger;
                        return true;
                    case kZero:
                        return false;  // no leading zeros
                    case kPoint:
                        number_ = kFraction;
                        return true;
                    case kE:
                    case kESign:
                        number_ = kExponent;
                        return true;
                    default:
                        return true;
                }
            }
            if (c == '.') {
                if (number_ != kZero && number_ != kInteger) return false;
                number_ = kPoint;
                return true;
            }
            if (c == 'e' || c == 'E') {
                if (number_ != kZero && number_ != kInteger && number_ != kFraction) return false;
                number_ = kE;
                return true;
            }
            if (c == '+' || c == '-') {
                if (number_ != kE) return false;
                number_ = kESign;
                return true;
            }
            // Any other byte ends the number, if it may end here, and is read after it.
            if (!may_end(number_)) return false;
            if (stack_.empty()) return after_value();
            expect_ = Expect::CommaOrEnd;
            return step(c);
        case Expect::InLiteral:
            if (c != *literal_) return false;
            if (*++literal_ == '\0') return after_value();
            return true;
        default:
            break;
    }
    if (is_blank(c)) return true;
    switch (expect_) {
        case Expect::ElementOrEnd:
            if (c == ']') {
                stack_.pop_back();
                return after_value();
            }
            return start_value(c);
        case Expect::KeyOrEnd:
            if (c == '}') {
                stack_.pop_back();
                return after_value();
            }
            [[fallthrough]];
        case Expect::Key:
            if (c != '"') return false;
            key_ = true;
            expect_ = Expect::InString;
            return true;
        case Expect::Colon:
            if (c != ':') return false;
            expect_ = Expect::Value;
            return true;
        case Expect::CommaOrEnd: {
            const bool array = stack_.back() == '[';
            if (c == ',') {
                expect_ = array ? Expect::Element : Expect::Key;
                return true;
            }
            if (c != (array ? ']' : '}')) return false;
            stack_.pop_back();
            return after_value();
        }
        default:  // Value, Element
            return start_value(c);
    }
}

}  // namespace replay
