-- Identity linking in the PKCE flow happens at the code exchange, not at the
-- provider callback (issue 17): the callback keeps the provider identity it
-- read here, on the flow of the linking user (flow_state.user_id), and
-- POST /token?grant_type=pkce links it once the code_verifier matched. A link
-- URL opened in someone else's browser (the attacker's own link, sent to a
-- victim) then links nothing: the code lands in that browser, which has no
-- verifier, and the one who has the verifier never sees the code.
-- {"provider": "<name>", "user": <the provider's user: id, emails, ...>}
ALTER TABLE __NS__flow_state ADD COLUMN link_identity jsonb;
