-- C1: a new user
\set n random(1, 1000000000000)
INSERT INTO users (user_id, username) VALUES ('wu' || :client_id || '.' || :n, 'n_' || :n);
