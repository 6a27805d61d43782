package dev.kassign.plugins;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small strict JSON codec, so the plug-ins need nothing on the classpath beyond Kafka's own jars (a Java
 * consumer's classpath has no Jackson).
 *
 * <p>Reading gives {@link LinkedHashMap} for objects (key order kept, duplicate keys refused), {@link ArrayList}
 * for arrays, {@link String}, {@link Boolean}, {@code null}, and for numbers a {@link Long} when the literal is an
 * integer that fits, else a {@link BigDecimal}. Nesting is limited to {@value #MAX_DEPTH} levels. Writing takes
 * the same types (any {@link Map}, {@link Collection}, {@link Number}) and writes compact JSON.
 */
public final class Json {

    /** The deepest nesting of arrays and objects read. */
    public static final int MAX_DEPTH = 64;

    private final String text;
    private int pos;

    private Json(String text) {
        this.text = text;
    }

    /** A document that is not JSON. */
    public static final class ParseException extends Exception {
        private static final long serialVersionUID = 1L;

        ParseException(String message) {
            super(message);
        }
    }

    /**
     * Parse one JSON document.
     *
     * @param text the document
     * @return the value (see the class comment for the types)
     * @throws ParseException when the text is not exactly one JSON value
     */
    public static Object parse(String text) throws ParseException {
        Json p = new Json(text);
        p.skipWhitespace();
        Object value = p.value(0);
        p.skipWhitespace();
        if (p.pos != text.length()) {
            throw p.error("trailing text after the JSON value");
        }
        return value;
    }

    /**
     * Write a value as compact JSON.
     *
     * @param value a Map (string keys), Collection, String, Number, Boolean or null
     * @return the JSON text
     */
    public static String write(Object value) {
        StringBuilder out = new StringBuilder();
        write(value, out);
        return out.toString();
    }

    private static void write(Object value, StringBuilder out) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof String s) {
            writeString(s, out);
        } else if (value instanceof Boolean b) {
            out.append(b.booleanValue());
        } else if (value instanceof Double || value instanceof Float) {
            double d = ((Number) value).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) {
                throw new IllegalArgumentException("JSON has no " + d);
            }
            out.append(BigDecimal.valueOf(d).stripTrailingZeros().toPlainString());
        } else if (value instanceof BigDecimal bd) {
            out.append(bd.toPlainString());
        } else if (value instanceof Number n) {
            out.append(n.longValue());
        } else if (value instanceof Map<?, ?> m) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                writeString(String.valueOf(e.getKey()), out);
                out.append(':');
                write(e.getValue(), out);
            }
            out.append('}');
        } else if (value instanceof Collection<?> c) {
            out.append('[');
            boolean first = true;
            for (Object o : c) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                write(o, out);
            }
            out.append(']');
        } else {
            throw new IllegalArgumentException("cannot write a " + value.getClass().getName() + " as JSON");
        }
    }

    private static void writeString(String s, StringBuilder out) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }

    private ParseException error(String what) {
        return new ParseException(what + " at offset " + pos);
    }

    private void skipWhitespace() {
        while (pos < text.length()) {
            char c = text.charAt(pos);
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                pos++;
            } else {
                break;
            }
        }
    }

    private Object value(int depth) throws ParseException {
        if (pos >= text.length()) {
            throw error("unexpected end of the JSON text");
        }
        char c = text.charAt(pos);
        switch (c) {
            case '{':
                return object(depth + 1);
            case '[':
                return array(depth + 1);
            case '"':
                return string();
            case 't':
                return literal("true", Boolean.TRUE);
            case 'f':
                return literal("false", Boolean.FALSE);
            case 'n':
                return literal("null", null);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    return number();
                }
                throw error("unexpected character '" + c + "'");
        }
    }

    private Object literal(String word, Object value) throws ParseException {
        if (!text.startsWith(word, pos)) {
            throw error("not a JSON value");
        }
        pos += word.length();
        return value;
    }

    private Map<String, Object> object(int depth) throws ParseException {
        if (depth > MAX_DEPTH) {
            throw error("nesting deeper than " + MAX_DEPTH + " levels");
        }
        pos++;
        Map<String, Object> out = new LinkedHashMap<>();
        skipWhitespace();
        if (pos < text.length() && text.charAt(pos) == '}') {
            pos++;
            return out;
        }
        while (true) {
            skipWhitespace();
            if (pos >= text.length() || text.charAt(pos) != '"') {
                throw error("expected a string key");
            }
            String key = string();
            skipWhitespace();
            expect(':');
            skipWhitespace();
            Object v = value(depth);
            if (out.containsKey(key)) {
                throw error("duplicate key \"" + key + "\"");
            }
            out.put(key, v);
            skipWhitespace();
            if (pos < text.length() && text.charAt(pos) == ',') {
                pos++;
                continue;
            }
            expect('}');
            return out;
        }
    }

    private List<Object> array(int depth) throws ParseException {
        if (depth > MAX_DEPTH) {
            throw error("nesting deeper than " + MAX_DEPTH + " levels");
        }
        pos++;
        List<Object> out = new ArrayList<>();
        skipWhitespace();
        if (pos < text.length() && text.charAt(pos) == ']') {
            pos++;
            return out;
        }
        while (true) {
            skipWhitespace();
            out.add(value(depth));
            skipWhitespace();
            if (pos < text.length() && text.charAt(pos) == ',') {
                pos++;
                continue;
            }
            expect(']');
            return out;
        }
    }

    private void expect(char c) throws ParseException {
        if (pos >= text.length() || text.charAt(pos) != c) {
            throw error("expected '" + c + "'");
        }
        pos++;
    }

    private String string() throws ParseException {
        pos++; // opening quote
        StringBuilder out = new StringBuilder();
        while (true) {
            if (pos >= text.length()) {
                throw error("unterminated string");
            }
            char c = text.charAt(pos++);
            if (c == '"') {
                return out.toString();
            }
            if (c < 0x20) {
                throw error("control character in a string");
            }
            if (c != '\\') {
                out.append(c);
                continue;
            }
            if (pos >= text.length()) {
                throw error("unterminated string");
            }
            char e = text.charAt(pos++);
            switch (e) {
                case '"' -> out.append('"');
                case '\\' -> out.append('\\');
                case '/' -> out.append('/');
                case 'b' -> out.append('\b');
                case 'f' -> out.append('\f');
                case 'n' -> out.append('\n');
                case 'r' -> out.append('\r');
                case 't' -> out.append('\t');
                case 'u' -> {
                    if (pos + 4 > text.length()) {
                        throw error("truncated \\u escape");
                    }
                    try {
                        out.append((char) Integer.parseInt(text.substring(pos, pos + 4), 16));
                    } catch (NumberFormatException ex) {
                        throw error("bad \\u escape");
                    }
                    pos += 4;
                }
                default -> throw error("bad escape \\" + e);
            }
        }
    }

    private Object number() throws ParseException {
        int start = pos;
        if (text.charAt(pos) == '-') {
            pos++;
        }
        int digits = pos;
        while (pos < text.length() && Character.isDigit(text.charAt(pos))) {
            pos++;
        }
        if (pos == digits || (text.charAt(digits) == '0' && pos - digits > 1)) {
            throw error("bad number");
        }
        boolean integral = true;
        if (pos < text.length() && text.charAt(pos) == '.') {
            integral = false;
            pos++;
            int frac = pos;
            while (pos < text.length() && Character.isDigit(text.charAt(pos))) {
                pos++;
            }
            if (pos == frac) {
                throw error("bad number");
            }
        }
        if (pos < text.length() && (text.charAt(pos) == 'e' || text.charAt(pos) == 'E')) {
            integral = false;
            pos++;
            if (pos < text.length() && (text.charAt(pos) == '+' || text.charAt(pos) == '-')) {
                pos++;
            }
            int exp = pos;
            while (pos < text.length() && Character.isDigit(text.charAt(pos))) {
                pos++;
            }
            if (pos == exp) {
                throw error("bad number");
            }
        }
        String literal = text.substring(start, pos);
        if (pos - start > 400) {
            throw error("number literal longer than 400 characters");
        }
        if (integral) {
            BigInteger bi = new BigInteger(literal);
            if (bi.bitLength() < 64) {
                return bi.longValue();
            }
            return new BigDecimal(bi);
        }
        return new BigDecimal(literal);
    }
}
