-- C4: a like of a random post; the trigger counts it on the post
\set p random(1, :nposts)
\set u random(1, :nusers)
INSERT INTO likes (post_no, user_no, creation_date) VALUES (:p, :u, now());
