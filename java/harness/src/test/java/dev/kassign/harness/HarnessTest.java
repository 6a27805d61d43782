package dev.kassign.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

/** The batch loop's side of the contract (java/harness/README.md): ids echoed, failures as answers. */
class HarnessTest {
    private static JsonNode answer(String line) throws Exception {
        return Json.MAPPER.readTree(Json.MAPPER.writeValueAsString(newHarness().answer(line)));
    }

    private static Harness newHarness() throws Exception {
        var c = Harness.class.getDeclaredConstructor();
        c.setAccessible(true);
        return c.newInstance();
    }

    @Test
    void echoesTheIdAndAnswers() throws Exception {
        JsonNode a = answer("{\"id\": \"case-7\", \"assignor\": \"range\", \"instance\": {\"topics\": {\"T\": 3},"
            + " \"members\": [{\"id\": \"b\", \"topics\": [\"T\"]}, {\"id\": \"a\", \"topics\": [\"T\"]}]}}");
        assertEquals("case-7", a.get("id").asText());
        assertEquals("{\"b\":{\"T\":[2]},\"a\":{\"T\":[0,1]}}", a.get("assignment").toString());
    }

    @Test
    void anUnknownAssignorIsTheCasesError() throws Exception {
        JsonNode a = answer("{\"id\": 1, \"assignor\": \"nope\", \"instance\": {}}");
        assertTrue(a.get("error").asText().contains("unknown assignor 'nope'"), a.toString());
    }

    @Test
    void notJsonIsAnErrorWithANullId() throws Exception {
        JsonNode a = answer("{not json");
        assertTrue(a.get("id").isNull());
        assertTrue(a.get("error").asText().startsWith("not JSON"), a.toString());
    }

    @Test
    void theReleaseOnTheClasspathIsKnown() {
        assertEquals("4.4.0", Harness.kafkaVersion());
    }
}
