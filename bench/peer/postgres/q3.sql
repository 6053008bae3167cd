-- Q3: a user's posts, newest first, content cut to 200 characters (no
-- LIMIT: feedd's Q3 returns every copy in the user's partition too)
\set u random(1, :nusers)
SELECT post_no, post_id, user_no, user_username, title, left(content, 200) AS content,
       creation_date, comment_count, like_count
  FROM posts WHERE user_no = :u ORDER BY creation_date DESC;
