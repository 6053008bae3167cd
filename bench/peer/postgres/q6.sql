-- Q6: the 100 newest posts, content cut to 200 characters
SELECT post_no, post_id, user_no, user_username, title, left(content, 200) AS content,
       creation_date, comment_count, like_count
  FROM posts ORDER BY creation_date DESC LIMIT 100;
