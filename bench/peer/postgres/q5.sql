-- Q5: a post's likes, with their authors' usernames
\set p random(1, :nposts)
SELECT * FROM likes WHERE post_no = :p ORDER BY creation_date;
