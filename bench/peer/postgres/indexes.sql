-- After the load: the keys' sequences, the lookups, and the indexes that
-- answer Q3, Q4, Q5 and Q6 and the rename's fan-out.
SELECT setval(pg_get_serial_sequence('users', 'user_no'), (SELECT max(user_no) FROM users));
SELECT setval(pg_get_serial_sequence('posts', 'post_no'), (SELECT max(post_no) FROM posts));
SELECT setval(pg_get_serial_sequence('comments', 'comment_no'),
              (SELECT coalesce(max(comment_no), 1) FROM comments));
SELECT setval(pg_get_serial_sequence('likes', 'like_no'),
              (SELECT coalesce(max(like_no), 1) FROM likes));
CREATE UNIQUE INDEX users_user_id ON users (user_id);
CREATE UNIQUE INDEX posts_post_id ON posts (post_id);
CREATE INDEX posts_by_user ON posts (user_no, creation_date DESC);  -- Q3
CREATE INDEX posts_by_date ON posts (creation_date DESC);            -- Q6
CREATE INDEX comments_by_post ON comments (post_no, creation_date);  -- Q4
CREATE INDEX likes_by_post ON likes (post_no, creation_date);        -- Q5
CREATE INDEX comments_by_user ON comments (user_no);                 -- rename
CREATE INDEX likes_by_user ON likes (user_no);                       -- rename
VACUUM ANALYZE;
