package dev.kassign.plugins;

import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class JsonTest {

    @Test
    void readsAndWritesBackTheSameDocument() throws Exception {
        String text = "{\"a\":[1,-2,3.5,1e3,true,false,null],\"b\":{\"c\":\"x\\\"y\\\\z\\n\\u00e9\"},\"d\":[]}";
        Object v = Json.parse(text);
        Map<String, Object> expected = new LinkedHashMap<>();
        expected.put("a", new ArrayList<>(java.util.Arrays.asList(1L, -2L, new BigDecimal("3.5"), new BigDecimal("1e3"),
            true, false, null)));
        expected.put("b", Map.of("c", "x\"y\\z\né"));
        expected.put("d", List.of());
        assertEquals(expected, v);
        assertEquals("{\"a\":[1,-2,3.5,1000,true,false,null],\"b\":{\"c\":\"x\\\"y\\\\z\\né\"},\"d\":[]}", Json.write(v));
    }

    @Test
    void refusesWhatIsNotStrictJson() {
        for (String bad : List.of("", "{", "{\"a\":1,\"a\":2}", "[1,]", "01", "1.", "NaN", "{\"a\":1} x", "\"\u0001\"",
            "[".repeat(65) + "]".repeat(65), "{'a':1}")) {
            assertThrows(Json.ParseException.class, () -> Json.parse(bad), bad);
        }
        assertEquals(1L, ((List<?>) nested(64)).size());
    }

    private static Object nested(int depth) {
        try {
            Object v = Json.parse("[".repeat(depth) + "]".repeat(depth));
            return v;
        } catch (Json.ParseException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void writesNumbersAsJsonNumbers() {
        assertEquals("[2147483648,0.1,1E+20]".replace("1E+20", "100000000000000000000"),
            Json.write(List.of(2147483648L, 0.1, 1e20)));
        assertThrows(IllegalArgumentException.class, () -> Json.write(List.of(Double.NaN)));
    }
}
